"""Errors raised by the ProxyBroker client, and the error each denial of the broker stands for."""

from __future__ import annotations

from typing import Optional

from . import wire
from .gen.proxybroker.v1 import broker_pb2 as pb


class BrokerError(Exception):
    """The broker refused a request, or could not be reached.

    ``reason`` is the broker's ``DenyReason`` name without its prefix (``INVALID_ARGUMENT``,
    ``UNAVAILABLE``, ``NOT_FOUND``, ``NO_PROXY_AVAILABLE``), or ``UNAVAILABLE`` when no answer
    came in time.
    """

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.reason = reason
        self.message = message


class NoProxyAvailable(BrokerError):
    """No proxy was eligible within ``max_wait``.

    ``retry_after`` (seconds, or None) is the earliest moment a proxy is known to become
    eligible, counted from the denial.
    """

    def __init__(self, message: str = "", retry_after: Optional[float] = None) -> None:
        super().__init__("NO_PROXY_AVAILABLE", message)
        self.retry_after = retry_after


class BrokerUnavailable(BrokerError):
    """No answer from the broker in time (stream down, broker unreachable or overloaded)."""

    def __init__(self, message: str = "") -> None:
        super().__init__("UNAVAILABLE", message)


class LeaseLost(BrokerError):
    """The lease is no longer held: it expired, was revoked, or is unknown to the broker.

    ``lost_reason`` is ``EXPIRED``, ``REVOKED`` or ``NOT_FOUND``.
    """

    def __init__(self, lease_id: str, lost_reason: str) -> None:
        super().__init__("LEASE_LOST", f"lease {lease_id} lost ({lost_reason})")
        self.lease_id = lease_id
        self.lost_reason = lost_reason


def denied_error(body: pb.LeaseDenied) -> BrokerError:
    """The error a ``LeaseDenied`` answer stands for: :class:`NoProxyAvailable` (with its
    ``retry_after``), :class:`BrokerUnavailable`, else a :class:`BrokerError` with the reason."""
    reason = wire.short_name(pb.DenyReason, body.reason, "DENY_REASON_")
    if reason == "NO_PROXY_AVAILABLE":
        retry = wire.seconds_of(body.retry_after) if body.HasField("retry_after") else None
        return NoProxyAvailable(body.message, retry)
    if reason == "UNAVAILABLE":
        return BrokerUnavailable(body.message)
    return BrokerError(reason, body.message)
