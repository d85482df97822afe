"""``BrokerClient``: acquire proxies from a ProxyBroker over one multiplexed ``Lease`` stream."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from concurrent.futures import Future, TimeoutError as FutureTimeout
from typing import Dict, Mapping, Optional, Sequence, Tuple

import grpc

from . import wire
from .errors import BrokerUnavailable
from .gen.proxybroker.v1 import admin_pb2_grpc, broker_pb2 as pb, broker_pb2_grpc
from .heartbeat import Heartbeats
from .lease import Lease, _denied_error
from .stream import LeaseStream

log = logging.getLogger("proxybroker_client")

_STARTED_MS = int(time.time() * 1000)

#: Channel options: reconnect quickly after a broker restart (gRPC's default backoff grows to 120 s).
DEFAULT_CHANNEL_OPTIONS: Tuple[Tuple[str, int], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
)


def default_worker_id() -> str:
    """``$WORKER_ID``, else hostname-pid-starttime (milliseconds since the epoch), as in the TS SDK."""
    return os.environ.get("WORKER_ID") or f"{socket.gethostname()}-{os.getpid()}-{_STARTED_MS}"


class BrokerClient:
    """A worker's connection to the broker.

    All leases of the client share one bidi ``Lease`` stream (reopened when it breaks; held
    leases survive and their heartbeats continue on the new stream). Thread-safe: call
    :meth:`acquire` from any number of threads.

    :param address: ``host:port`` of the broker.
    :param pool: pool to lease from (``default``).
    :param worker_id: defaults to :func:`default_worker_id`.
    :param heartbeat: renew held leases every ttl/3 until released (default for :meth:`acquire`).
    :param request_timeout: seconds to wait for an answer beyond ``max_wait``.
    """

    def __init__(
        self,
        address: str = "127.0.0.1:50051",
        pool: str = "default",
        worker_id: Optional[str] = None,
        *,
        heartbeat: bool = True,
        request_timeout: float = 10.0,
        channel_options: Sequence[Tuple[str, object]] = DEFAULT_CHANNEL_OPTIONS,
        credentials: Optional[grpc.ChannelCredentials] = None,
    ) -> None:
        self.address = address
        self.pool = pool
        self.worker_id = worker_id or default_worker_id()
        self.heartbeat = heartbeat
        self.request_timeout = request_timeout
        options = list(channel_options)
        self._channel = (
            grpc.secure_channel(address, credentials, options=options)
            if credentials is not None
            else grpc.insecure_channel(address, options=options)
        )
        #: Raw stubs, for calls the wrapper does not cover (snapshot, admin).
        self.stub = broker_pb2_grpc.ProxyBrokerStub(self._channel)
        self.admin = admin_pb2_grpc.ProxyAdminStub(self._channel)
        self._held: Dict[str, Lease] = {}
        self._held_lock = threading.Lock()
        self._closed = False
        self._stream = LeaseStream(
            lambda requests: self.stub.Lease(requests, wait_for_ready=True),
            self._abandon_unmatched,
        )
        self._heartbeats = Heartbeats(self._send_renew)

    # -- public API ------------------------------------------------------------------------

    def acquire(
        self,
        target: str,
        ttl: Optional[float] = None,
        max_wait: Optional[float] = None,
        session_key: str = "",
        tier: str = "",
        labels: Optional[Mapping[str, str]] = None,
        *,
        heartbeat: Optional[bool] = None,
        timeout: Optional[float] = None,
    ) -> Lease:
        """Lease a proxy for ``target`` (a URL, or a bare host / domain); blocks until answered.

        ``ttl`` and ``max_wait`` are seconds (None: broker defaults, 30 s and 0). Raises
        :class:`NoProxyAvailable` (with ``retry_after``) when nothing is eligible within
        ``max_wait``, :class:`BrokerError` for a bad request, :class:`BrokerUnavailable` when
        no answer came within ``max_wait + request_timeout`` (or ``timeout``).
        """
        fut = self.acquire_async(target, ttl, max_wait, session_key, tier, labels, heartbeat=heartbeat)
        wait = timeout if timeout is not None else (max_wait or 0) + self.request_timeout
        try:
            return fut.result(timeout=wait)
        except FutureTimeout:
            self.abandon_acquire(fut)
            raise BrokerUnavailable(f"no answer from the broker within {wait:.1f} s") from None

    def acquire_async(
        self,
        target: str,
        ttl: Optional[float] = None,
        max_wait: Optional[float] = None,
        session_key: str = "",
        tier: str = "",
        labels: Optional[Mapping[str, str]] = None,
        *,
        heartbeat: Optional[bool] = None,
    ) -> "Future[Lease]":
        """:meth:`acquire` without blocking: a :class:`concurrent.futures.Future` of the
        :class:`Lease` (or of the error). It has no timeout of its own: give up on it with
        :meth:`abandon_acquire` (a grant that arrives later is released as ``ABANDONED``)."""
        req = pb.AcquireLeaseRequest(
            request_id=uuid.uuid4().hex,
            worker_id=self.worker_id,
            pool=self.pool,
            session_key=session_key,
            tier=tier,
            labels=dict(labels or {}),
        )
        if "://" in target:
            req.target_url = target
        else:
            req.domain = target
        if ttl is not None:
            req.ttl.CopyFrom(wire.duration(ttl))
        if max_wait is not None:
            req.max_wait.CopyFrom(wire.duration(max_wait))
        beat = self.heartbeat if heartbeat is None else heartbeat
        out: Future = Future()
        out.request_id = req.request_id  # type: ignore[attr-defined]
        try:
            raw = self._stream.acquire(req)
        except RuntimeError as err:  # the client is closed
            out.set_exception(BrokerUnavailable(str(err)))
            return out

        def done(f: Future) -> None:
            if f.cancelled():
                if not out.cancelled():
                    out.set_exception(BrokerUnavailable("the client was closed"))
                return
            kind, body = f.result()
            if kind == "denied":
                if out.set_running_or_notify_cancel():
                    out.set_exception(_denied_error(body))
                return
            if not out.set_running_or_notify_cancel():  # the caller gave up meanwhile
                self._abandon_unmatched(body.lease)
                return
            out.set_result(self._adopt(body.lease, ttl, beat))

        raw.add_done_callback(done)
        return out

    def abandon_acquire(self, fut: "Future[Lease]") -> None:
        """Stop waiting for an :meth:`acquire_async`; a grant that still comes is released."""
        self._stream.forget_acquire(fut.request_id)  # type: ignore[attr-defined]
        if not fut.cancel() and fut.done() and fut.exception() is None:
            fut.result().release_async("ABANDONED")

    def _adopt(self, msg: pb.Lease, ttl: Optional[float], beat: bool) -> Lease:
        if ttl is None:  # broker default: derive it from the expiry (same-host clocks assumed)
            ttl_eff = min(max(wire.epoch_of(msg.expire_time) - time.time(), 1.0), 3600.0)
        else:
            ttl_eff = ttl
        lease = Lease(self, msg, ttl_eff, ttl_requested=ttl is not None)
        with self._held_lock:
            self._held[lease.lease_id] = lease
        if beat:
            self._heartbeats.add(lease)
        return lease

    def held_leases(self) -> Sequence[Lease]:
        """Leases acquired by this client and neither released nor lost."""
        with self._held_lock:
            return list(self._held.values())

    @property
    def streams_opened(self) -> int:
        """How many Lease streams were opened (more than 1 after reconnects)."""
        return self._stream.streams_opened

    def close(self, abandon: bool = True, timeout: float = 2.0) -> None:
        """Stop heartbeats and close the stream and channel.

        With ``abandon`` (default) the leases still held are first released as ``ABANDONED``
        (best effort, ``timeout`` seconds for all); otherwise they stay with the broker until their
        TTL runs out.
        """
        if self._closed:
            return
        self._closed = True
        if abandon:
            pending = [(lease, lease.release_async("ABANDONED")) for lease in self.held_leases()]
            deadline = time.monotonic() + timeout
            for lease, fut in pending:  # best effort, `timeout` seconds for all of them
                try:
                    fut.result(timeout=max(0.0, deadline - time.monotonic()))
                except Exception as err:
                    log.info("proxybroker: could not release %s on close: %s", lease.lease_id, err)
        self._heartbeats.stop()
        self._stream.close()
        self._channel.close()

    def __enter__(self) -> "BrokerClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- used by Lease and the heartbeat thread --------------------------------------------

    def _send_renew(self, lease: Lease):
        req = pb.RenewLeaseRequest(lease_id=lease.lease_id, fencing_token=lease.fencing_token)
        ttl = lease._renew_ttl()
        if ttl is not None:
            req.ttl.CopyFrom(wire.duration(ttl))
        return self._stream.lease_op(lease.lease_id, "renew", pb.LeaseRequest(renew=req))

    def _send_release(self, lease: Lease, outcome: pb.Outcome):
        req = pb.ReleaseLeaseRequest(lease_id=lease.lease_id, fencing_token=lease.fencing_token, outcome=outcome)
        return self._stream.lease_op(lease.lease_id, "release", pb.LeaseRequest(release=req))

    def _forget(self, lease: Lease) -> None:
        with self._held_lock:
            self._held.pop(lease.lease_id, None)

    def _abandon_unmatched(self, msg: pb.Lease) -> None:
        """A grant nobody waits for any more (its acquire timed out): give it back at once."""
        if self._closed:
            return
        log.info("proxybroker: releasing unclaimed lease %s as ABANDONED", msg.lease_id)
        req = pb.ReleaseLeaseRequest(
            lease_id=msg.lease_id,
            fencing_token=msg.fencing_token,
            outcome=pb.Outcome(kind=pb.OUTCOME_KIND_ABANDONED),
        )
        try:
            self._stream.lease_op(msg.lease_id, "release", pb.LeaseRequest(release=req))
        except RuntimeError:
            pass
