"""A lease handle: the proxy to use, its renewal, its release, and a ``lost`` event.

A lease's **deadline** is kept on the client's monotonic clock: ``sent + ttl - margin``, where
``sent`` is when the acquire (or the last renew the broker confirmed) was *sent*. The broker
cannot have expired the lease before then, whatever the network delay of its answer and whatever
the skew between this host's wall clock and the broker's (or Redis's). At the deadline the lease
counts as lost (``lost`` is set, reason ``EXPIRED``) unless a renewal confirmed it meanwhile.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Callable, Optional, Union

from . import wire
from .errors import BrokerError, BrokerUnavailable, LeaseLost
from .gen.proxybroker.v1 import broker_pb2 as pb

if TYPE_CHECKING:  # pragma: no cover
    from .client import BrokerClient

#: The smallest safety margin (seconds) between a lease's deadline and the end of its TTL.
MIN_DEADLINE_MARGIN = 0.2


def deadline_margin(ttl: float, minimum: float = MIN_DEADLINE_MARGIN) -> float:
    """How long before the end of its TTL a lease is given up: ``max(minimum, 10 % of ttl)``, at
    most a quarter of the TTL (a heartbeat every ttl/3 must still be answered before it)."""
    return min(max(minimum, 0.1 * ttl), ttl / 4)


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

    def __init__(
        self,
        client: "BrokerClient",
        msg: pb.Lease,
        ttl: float,
        ttl_requested: bool,
        sent_at: float,
        margin: Callable[[float], float] = deadline_margin,
    ) -> None:
        self._client = client
        self._clock = client.clock
        self._margin = margin
        self.lease_id: str = msg.lease_id
        self.fencing_token: int = msg.fencing_token
        self.pool: str = msg.pool
        self.domain: str = msg.domain
        self.proxy: pb.Proxy = msg.proxy
        self.proxy_url: str = msg.proxy.url
        self.expire_time: float = wire.epoch_of(msg.expire_time)
        self.session_key: str = msg.session_key
        self.session_rebound: bool = msg.session_rebound
        self.ttl = ttl
        self._ttl_requested = ttl_requested
        self.acquired_at: float = self._clock()
        self._lost = threading.Event()
        self.lost_reason: Optional[str] = None
        self.released = False
        self._lock = threading.Lock()
        # Before it the broker cannot have expired the lease (sent_at is no later than its grant).
        self._deadline = sent_at + ttl - margin(ttl)
        self._heartbeat = False  # renewed by the client's heartbeats
        self._renewing = False  # a heartbeat renew is in flight
        self._release_future: Optional[Future] = None  # the release in flight

    def __repr__(self) -> str:
        state = "lost" if self.lost.is_set() else "released" if self.released else "held"
        return f"<Lease {self.lease_id[:8]}… {self.proxy.id} for {self.domain} ({state})>"

    @property
    def lost(self) -> threading.Event:
        """Set when the lease is gone: the broker said so, or its deadline passed without a
        confirmed renewal (then ``lost_reason`` is ``EXPIRED``). Checked against the clock on
        every access, and set by the client's timer thread at the deadline."""
        self._check_deadline()
        return self._lost

    @property
    def deadline(self) -> float:
        """When the lease counts as lost unless a renewal confirms it, on the client's monotonic
        clock (``BrokerClient.clock``, ``time.monotonic`` by default)."""
        return self._deadline

    @property
    def held(self) -> bool:
        """True while neither released nor lost (the deadline has not passed)."""
        return not self.released and not self.lost.is_set()

    def renew(self, ttl: Optional[float] = None, timeout: Optional[float] = None) -> float:
        """Extend the lease to now + ttl (default: its ttl); returns the new ``expire_time``.

        Raises :class:`LeaseLost` when the lease is lost (the broker no longer holds it for us,
        or its deadline passed), :class:`BrokerError` when the renew could not be carried out (the
        lease is unchanged). The new deadline counts from when this renew was sent.
        """
        if self.lost.is_set():
            raise LeaseLost(self.lease_id, self.lost_reason or "")
        if ttl is not None:
            self.ttl = ttl
            self._ttl_requested = True
        sent, ttl_sent = self._clock(), self.ttl
        fut = self._client._send_renew(self)
        kind, body = _wait(fut, timeout if timeout is not None else self._client.request_timeout)
        self._on_renew_answer(kind, body, sent, ttl_sent)
        if kind == "lost":
            raise LeaseLost(self.lease_id, self.lost_reason or "")
        if kind == "denied":
            raise _denied_error(body)
        return self.expire_time

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
            return fut.result(timeout=timeout if timeout is not None else self._client.request_timeout)
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
        out: Future = Future()
        with self._lock:
            if self.released:
                out.set_result(False)
                return out
            if self._release_future is not None:  # one release at a time: join the one in flight
                return self._release_future
            self._release_future = out
        outcome = pb.Outcome(kind=wire.outcome_kind(kind), http_status=http_status, bytes=bytes, detail=detail)
        if retry_after is not None:
            outcome.retry_after.CopyFrom(wire.duration(retry_after))
        if latency is not None:
            outcome.latency.CopyFrom(wire.duration(latency))
        try:
            raw = self._client._send_release(self, outcome)
        except RuntimeError as err:  # the client is closed
            with self._lock:
                self._release_future = None
            out.set_exception(BrokerUnavailable(str(err)))
            return out

        def done(f: Future) -> None:
            if not f.cancelled() and f.exception() is not None:  # the broker refused the token
                with self._lock:
                    self._release_future = None
                self._client._watch_deadline(self)
                out.set_exception(f.exception())
                return
            answer, body = ("cancelled", None) if f.cancelled() else f.result()
            if answer in ("cancelled", "denied"):
                with self._lock:  # the lease is unchanged: a release may be tried again
                    self._release_future = None
                self._client._watch_deadline(self)  # held again: its deadline applies again
                out.set_exception(
                    _denied_error(body) if body is not None
                    else BrokerUnavailable("the client was closed before the release was answered")
                )
                return
            with self._lock:
                self.released = True
            self._client._forget(self)
            if answer == "lost":
                self._mark_lost(wire.short_name(pb.LostReason, body.reason, "LOST_REASON_"))
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

    # -- internal --------------------------------------------------------------------------

    def _renew_ttl(self) -> Optional[float]:
        """The ttl a renew asks for: the requested one, else unset (the lease keeps its own)."""
        return self.ttl if self._ttl_requested else None

    def _on_renew_answer(self, kind: str, body, sent: float, ttl: float) -> None:
        """A renew sent at ``sent`` (client clock) asking for ``ttl`` was answered."""
        if kind == "renewed":
            self.expire_time = wire.epoch_of(body.expire_time)
            with self._lock:
                if not self._lost.is_set():  # a lease given up at its deadline stays given up
                    self._deadline = max(self._deadline, sent + ttl - self._margin(ttl))
        elif kind == "lost":
            self._mark_lost(wire.short_name(pb.LostReason, body.reason, "LOST_REASON_"))

    def _check_deadline(self) -> bool:
        """Mark the lease lost (``EXPIRED``) when its deadline has passed while it is held and
        no release was sent; True when it is lost."""
        if self._lost.is_set():
            return True
        if self.released or self._release_future is not None or self._clock() < self._deadline:
            return False
        return self._mark_lost("EXPIRED")

    def _mark_lost(self, reason: str) -> bool:
        with self._lock:
            if self._lost.is_set():
                return True
            self.lost_reason = reason
            self._lost.set()
        self._client._forget(self)
        return True


def _wait(fut, timeout: float):
    try:
        return fut.result(timeout=timeout)
    except Exception as err:  # TimeoutError, CancelledError
        fut.cancel()
        raise BrokerUnavailable(f"no answer from the broker within {timeout:.1f} s") from err


def _denied_error(body: pb.LeaseDenied) -> BrokerError:
    from .errors import NoProxyAvailable

    reason = wire.short_name(pb.DenyReason, body.reason, "DENY_REASON_")
    if reason == "NO_PROXY_AVAILABLE":
        retry = wire.seconds_of(body.retry_after) if body.HasField("retry_after") else None
        return NoProxyAvailable(body.message, retry)
    if reason == "UNAVAILABLE":
        return BrokerUnavailable(body.message)
    return BrokerError(reason, body.message)
