"""A lease handle: the proxy to use, its renewal, its release, and a ``lost`` event.

A lease's **deadline** is kept on the client's monotonic clock: ``sent + ttl - margin``, where
``sent`` is when the acquire (or the last renew the broker confirmed) was *sent*. The broker
cannot have expired the lease before then, whatever the network delay of its answer and whatever
the skew between this host's wall clock and the broker's (or Redis's). At the deadline the lease
counts as lost (``lost`` is set, reason ``EXPIRED``) unless a renewal confirmed it meanwhile
(see :mod:`.lease_state`, which keeps that state).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Optional, Protocol, Tuple, Union

from . import wire
from .errors import BrokerError, BrokerUnavailable, LeaseLost, denied_error
from .gen.proxybroker.v1 import broker_pb2 as pb
from .lease_state import MIN_DEADLINE_MARGIN, LeaseState, deadline_margin, lost_reason_of

__all__ = ["Lease", "LeaseLink", "MIN_DEADLINE_MARGIN", "deadline_margin"]


class LeaseLink(Protocol):
    """How a lease handle reaches the client that granted it (the client gives it one)."""

    @property
    def request_timeout(self) -> float:
        """Seconds to wait for the broker's answer to a renew or release."""

    def send_renew(self, state: LeaseState) -> Future:
        """Send a renew; the future's result is the answer ``(kind, body)``."""

    def report_later(self, lease: "Lease", outcome: pb.Outcome) -> None:
        """Keep the outcome of a lease given up while the broker was unreachable, for replay."""

    def send_release(self, state: LeaseState, outcome: pb.Outcome) -> Future:
        """Send a release; the future's result is the answer ``(kind, body)``."""

    def watch_deadline(self, state: LeaseState) -> None:
        """A release failed: the lease is held again, and its deadline is watched again."""


class Lease:
    """One proxy leased for one domain-key.

    Attributes: ``lease_id``, ``fencing_token``, ``pool``, ``domain`` (the domain-key),
    ``proxy`` (the ``Proxy`` message), ``proxy_url`` (hand it to the HTTP client),
    ``expire_time`` (epoch seconds, broker clock: for display only), ``session_key``,
    ``session_rebound`` (the session's proxy changed: reset cookies), ``ttl`` (seconds, for
    heartbeats), ``acquired_at`` (when the grant arrived) and ``deadline``, both on the client's
    monotonic clock, ``lost`` (a
    :class:`threading.Event` set when the broker says the lease is gone, or at its deadline
    without a confirmed renewal: stop using the proxy then) and ``lost_reason``.

    Use as a context manager to release on exit: ``SUCCESS`` normally, ``ABANDONED`` when the
    block raised (release explicitly inside the block to report anything else).
    """

    def __init__(self, msg: pb.Lease, state: LeaseState, link: LeaseLink) -> None:
        self._state = state
        self._link = link
        self.lease_id: str = msg.lease_id
        self.fencing_token: int = msg.fencing_token
        self.pool: str = msg.pool
        self.domain: str = msg.domain
        self.proxy: pb.Proxy = msg.proxy
        self.proxy_url: str = msg.proxy.url
        self.session_key: str = msg.session_key
        self.session_rebound: bool = msg.session_rebound
        self.acquired_at: float = state.clock()

    def __repr__(self) -> str:
        state = "lost" if self.lost.is_set() else "released" if self.released else "held"
        return f"<Lease {self.lease_id[:8]}… {self.proxy.id} for {self.domain} ({state})>"

    @property
    def ttl(self) -> float:
        """Seconds: what heartbeats renew it for (set by :meth:`renew` with a ``ttl``)."""
        return self._state.ttl

    @ttl.setter
    def ttl(self, ttl: float) -> None:
        self._state.ttl = ttl

    @property
    def expire_time(self) -> float:
        """When the lease expires unless renewed, epoch seconds by the broker's clock: for display."""
        return self._state.expire_time

    @property
    def lost(self) -> threading.Event:
        """Set when the lease is gone: the broker said so, or its deadline passed without a
        confirmed renewal (then ``lost_reason`` is ``EXPIRED``). Checked against the clock on
        every access, and set by the client's timer thread at the deadline."""
        self._state.check_deadline()
        return self._state.lost

    @property
    def lost_reason(self) -> Optional[str]:
        """``EXPIRED``, ``REVOKED`` or ``NOT_FOUND`` once lost, else None."""
        return self._state.lost_reason

    @property
    def yielded(self) -> bool:
        """Given up because the broker was unreachable (``lost``, reason ``REVOKED``): a request
        already sent through it may finish; :meth:`release` then keeps its outcome for replay."""
        return self._state.yielded

    @property
    def released(self) -> bool:
        """True once the broker answered the release."""
        return self._state.released

    @property
    def deadline(self) -> float:
        """When the lease counts as lost unless a renewal confirms it, on the client's monotonic
        clock (``BrokerClient.clock``, ``time.monotonic`` by default)."""
        return self._state.deadline

    @property
    def held(self) -> bool:
        """True while neither released nor lost (the deadline has not passed)."""
        return self._state.held

    def renew(self, ttl: Optional[float] = None, timeout: Optional[float] = None) -> float:
        """Extend the lease to now + ttl (default: its ttl); returns the new ``expire_time``.

        Raises :class:`LeaseLost` when the lease is lost (the broker no longer holds it for us,
        or its deadline passed), :class:`BrokerError` when the renew could not be carried out (the
        lease is unchanged). The new deadline counts from when this renew was sent.
        """
        state = self._state
        if self.lost.is_set():
            raise LeaseLost(self.lease_id, state.lost_reason or "")
        if ttl is not None:
            state.ttl = ttl
            state.ttl_requested = True
        sent, ttl_sent = state.clock(), state.ttl
        fut = self._link.send_renew(state)
        kind, body = _wait(fut, timeout if timeout is not None else self._link.request_timeout)
        state.on_renew_answer(kind, body, sent, ttl_sent)
        if kind == "lost":
            raise LeaseLost(self.lease_id, state.lost_reason or "")
        if kind == "denied":
            raise denied_error(body)
        return state.expire_time

    def release(
        self,
        kind: Union[str, int] = "SUCCESS",
        http_status: int = 0,
        retry_after: Optional[float] = None,
        latency: Optional[float] = None,
        bytes: int = 0,
        detail: str = "",
        timeout: Optional[float] = None,
    ) -> bool:
        """Release with the outcome seen (``SUCCESS``, ``RATE_LIMITED``, ``BLOCKED``,
        ``PROXY_ERROR``, ``TARGET_ERROR``, ``ABANDONED``); durations in seconds.

        Returns True when released, False when the broker had already lost the lease (the
        outcome still counts for the proxy's score). Releasing twice is a no-op that returns
        False. Raises :class:`BrokerError` when the release could not be carried out (the lease
        stays held and heartbeats go on; retry).
        """
        fut = self.release_async(kind, http_status, retry_after, latency, bytes, detail)
        try:
            return fut.result(timeout=timeout if timeout is not None else self._link.request_timeout)
        except BrokerError:
            raise
        except Exception as err:  # TimeoutError, CancelledError
            raise BrokerUnavailable("no answer from the broker to the release") from err

    def release_async(
        self,
        kind: Union[str, int] = "SUCCESS",
        http_status: int = 0,
        retry_after: Optional[float] = None,
        latency: Optional[float] = None,
        bytes: int = 0,
        detail: str = "",
    ) -> "Future[bool]":
        """:meth:`release` without waiting: a :class:`concurrent.futures.Future` of its result
        (True / False, or the :class:`BrokerError`). For event loops (Scrapy's reactor)."""
        state = self._state
        out: Future = Future()
        with state.lock:
            if state.released:
                out.set_result(False)
                return out
            yielded = state.yielded
            if yielded:
                state.released = True
        if yielded:  # the broker was unreachable: the outcome goes with the replay
            self._link.report_later(self, _outcome(kind, http_status, retry_after, latency, bytes, detail))
            out.set_result(False)
            return out
        with state.lock:
            if state.release_future is not None:  # one release at a time: join the one in flight
                return state.release_future
            state.release_future = out
        outcome = _outcome(kind, http_status, retry_after, latency, bytes, detail)
        try:
            raw = self._link.send_release(state, outcome)
        except RuntimeError as err:  # the client is closed
            with state.lock:
                state.release_future = None
            out.set_exception(BrokerUnavailable(str(err)))
            return out

        def held_again() -> None:
            """The lease is unchanged: a release may be tried again, and its deadline applies again."""
            with state.lock:
                state.release_future = None
            self._link.watch_deadline(state)

        def done(f: Future) -> None:
            if not f.cancelled() and f.exception() is not None:  # the broker refused the token
                held_again()
                out.set_exception(f.exception())
                return
            answer, body = ("cancelled", None) if f.cancelled() else f.result()
            if answer in ("cancelled", "denied"):
                held_again()
                out.set_exception(
                    denied_error(body) if body is not None
                    else BrokerUnavailable("the client was closed before the release was answered")
                )
                return
            state.mark_released()
            if answer == "lost":
                state.mark_lost(lost_reason_of(body))
            out.set_result(answer == "released")

        raw.add_done_callback(done)
        return out

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.held:
            try:
                self.release("ABANDONED" if exc_type is not None else "SUCCESS")
            except BrokerError:
                if exc_type is None:
                    raise


def _outcome(kind, http_status, retry_after, latency, size, detail) -> pb.Outcome:
    outcome = pb.Outcome(kind=wire.outcome_kind(kind), http_status=http_status, bytes=size, detail=detail)
    if retry_after is not None:
        outcome.retry_after.CopyFrom(wire.duration(retry_after))
    if latency is not None:
        outcome.latency.CopyFrom(wire.duration(latency))
    return outcome


def _wait(fut: Future, timeout: float) -> Tuple[str, Any]:
    try:
        return fut.result(timeout=timeout)
    except Exception as err:  # TimeoutError, CancelledError
        fut.cancel()
        raise BrokerUnavailable(f"no answer from the broker within {timeout:.1f} s") from err
