"""``BrokerClient``: acquire proxies from a ProxyBroker over one multiplexed ``Lease`` stream."""

from __future__ import annotations

import collections
import logging
import os
import socket
import threading
import time
import uuid
from concurrent.futures import Future, TimeoutError as FutureTimeout
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import grpc
from google.protobuf import timestamp_pb2

from . import wire
from .auth import TokenInterceptor, tls_credentials
from .errors import BrokerError, BrokerUnavailable, LeaseLost, denied_error
from .gen.proxybroker.v1 import admin_pb2_grpc, broker_pb2 as pb, broker_pb2_grpc
from .heartbeat import Heartbeats
from .lease import Lease
from .lease_state import MIN_DEADLINE_MARGIN, LeaseState, deadline_margin
from .liveness import DEFAULT_SILENT_AFTER, ContactInterceptor, Liveness, check_silent_after
from .policy_rules import BrokerPolicies
from .stream import LeaseStream

log = logging.getLogger("proxybroker_client")

_STARTED_MS = int(time.time() * 1000)

#: After the Lease stream broke, the broker counts as gone when the channel is not ready again
#: within this many seconds (a draining replica's clients reach another one sooner).
GONE_AFTER = 0.3
#: Outcomes kept for replay at most (the oldest go first).
MAX_REPLAY = 10_000
#: Outcomes per ReportOutcomes call.
REPLAY_CHUNK = 1_000

#: Channel options: reconnect quickly after a broker restart (gRPC's default backoff grows to 120 s);
#: keepalive pings every 5 s, as the TypeScript SDK's (the broker allows them that often), so that
#: a connection that died silently (a partition that outlasted TCP) is replaced within about 10 s
#: instead of staying silent until the kernel gives up on it.
DEFAULT_CHANNEL_OPTIONS: Tuple[Tuple[str, int], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.keepalive_time_ms", 5000),
    ("grpc.keepalive_timeout_ms", 5000),
    ("grpc.keepalive_permit_without_calls", 1),
)


def default_worker_id() -> str:
    """``$WORKER_ID``, else hostname-pid-starttime (milliseconds since the epoch), as in the TS SDK."""
    return os.environ.get("WORKER_ID") or f"{socket.gethostname()}-{os.getpid()}-{_STARTED_MS}"


class AcquireFuture(Future):
    """The :class:`concurrent.futures.Future` of :meth:`BrokerClient.acquire_async`.

    ``request_id`` is the acquire's; give up on it with :meth:`BrokerClient.abandon_acquire`.
    """

    def __init__(self, request_id: str) -> None:
        super().__init__()
        self.request_id = request_id
        self._abandoned = False
        self._lease: Optional[Lease] = None  # the lease handed to it (set before its result)


class _Link:
    """How the leases of a client reach it (a :class:`~proxybroker_client.lease.LeaseLink`)."""

    def __init__(self, client: "BrokerClient") -> None:
        self._client = client

    @property
    def request_timeout(self) -> float:
        return self._client.request_timeout

    def send_renew(self, state: LeaseState) -> Future:
        return self._client._send_renew(state)

    def send_release(self, state: LeaseState, outcome: pb.Outcome) -> Future:
        return self._client._send_release(state, outcome)

    def report_later(self, lease: Lease, outcome: pb.Outcome) -> None:
        self._client._report_later(lease, outcome)

    def watch_deadline(self, state: LeaseState) -> None:
        self._client._watch_deadline(state)


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
    :param deadline_margin: seconds; a lease is given up (``lost`` set, reason ``EXPIRED``) at
        ``sent + ttl - margin`` unless a renewal confirmed it, where ``sent`` is when its acquire
        or last confirmed renew was sent and the margin is ``max(deadline_margin, 10 % of ttl)``,
        at most a quarter of the TTL.
    :param clock: the monotonic clock (seconds) lease deadlines are kept on; for tests.
    :param token: bearer token (``worker`` role) for a broker started with ``AUTH_TOKENS_FILE``;
        a refused token fails acquires with :class:`BrokerError` ``UNAUTHENTICATED`` (or
        ``PERMISSION_DENIED``).
    :param tls_ca: PEM of the CA that signed the broker's certificate: connect with TLS.
    :param tls_cert: with ``tls_key``, this worker's certificate (PEM) for a broker that requires
        client certificates (mTLS).
    :param credentials: channel credentials built by hand (instead of ``tls_*``).
    :param yield_leases: when the broker is gone (its connection refused or reset, and not back
        within ``GONE_AFTER`` seconds), give up every held lease at once (``lost`` is set, reason
        ``REVOKED``, :attr:`Lease.yielded` true: start nothing new through it; a request already
        sent may finish), and release them on the broker, with their outcomes, when it is back
        (else it would keep their pairs closed for the rest of their TTL). Workers with a fallback
        pool (the TypeScript SDK) then take those proxies after a second instead of a whole lease
        TTL. Default True; the broker is told with each acquire. A silent connection counts as the
        broker being gone (``silent_after``). False: leases are kept through outages, acquires wait
        for their answers, and a silent connection is only logged.
    :param silent_after: seconds, in [1.0, 3.0] (default 3.0). The client pings the broker on its
        Lease stream twice a second (every ``silent_after / 3`` seconds when that is shorter) and
        the broker answers each at once; a
        connection that carries no answer of any kind (pong, stream answer, unary answer) for
        ``silent_after`` seconds is silent: the broker or the network to it is gone, however open
        the TCP connection looks. With ``yield_leases`` the client then gives up every held lease
        as when the broker is gone, fails the acquires waiting for an answer, and fails new ones at
        once with :class:`BrokerUnavailable`, until the broker answers again (then the releases of
        the given-up leases are sent, with their outcomes). 3 s is the most any client may take,
        as in the TypeScript SDK: a worker with a fallback pool that is cut off too counts on every
        other worker to have stopped using its broker leases within that bound.
    """

    def __init__(
        self,
        address: str = "127.0.0.1:50051",
        pool: str = "default",
        worker_id: Optional[str] = None,
        *,
        heartbeat: bool = True,
        request_timeout: float = 10.0,
        deadline_margin: float = MIN_DEADLINE_MARGIN,
        clock: Callable[[], float] = time.monotonic,
        channel_options: Sequence[Tuple[str, object]] = DEFAULT_CHANNEL_OPTIONS,
        credentials: Optional[grpc.ChannelCredentials] = None,
        token: Optional[str] = None,
        tls_ca: Optional[bytes] = None,
        tls_cert: Optional[bytes] = None,
        tls_key: Optional[bytes] = None,
        yield_leases: bool = True,
        silent_after: float = DEFAULT_SILENT_AFTER,
    ) -> None:
        if deadline_margin < 0:
            raise ValueError(f"deadline_margin must not be negative: {deadline_margin}")
        #: Seconds without any answer after which the connection counts as silent (unreachable).
        self.silent_after = check_silent_after(silent_after)
        self.address = address
        self.pool = pool
        self.worker_id = worker_id or default_worker_id()
        self.heartbeat = heartbeat
        self.request_timeout = request_timeout
        self.deadline_margin = deadline_margin
        #: The monotonic clock lease deadlines are kept on.
        self.clock = clock
        options = list(channel_options)
        if tls_ca is not None or tls_cert is not None or tls_key is not None:
            if credentials is not None:
                raise ValueError("give tls_* or credentials, not both")
            credentials = tls_credentials(tls_ca, tls_cert, tls_key)
        channel = (
            grpc.secure_channel(address, credentials, options=options)
            if credentials is not None
            else grpc.insecure_channel(address, options=options)
        )
        # Any answer counts as contact with the broker: a pong, any answer on the Lease stream,
        # and (through the interceptor) the answer to any unary call.
        self._liveness = Liveness(self.silent_after, self._send_ping, self._went_silent, self._heard_again)
        interceptors: List[grpc.UnaryUnaryClientInterceptor] = [ContactInterceptor(self._liveness.answered)]
        if token is not None:
            interceptors.append(TokenInterceptor(token))
        self._channel = grpc.intercept_channel(channel, *interceptors)
        self._raw_channel = channel
        #: Raw stubs, for calls the wrapper does not cover (snapshot, admin).
        self.stub = broker_pb2_grpc.ProxyBrokerStub(self._channel)
        self.admin = admin_pb2_grpc.ProxyAdminStub(self._channel)
        # Held leases by id: the handle, and the state its heartbeats and deadline work on.
        self._held: Dict[str, Tuple[Lease, LeaseState]] = {}
        self._link = _Link(self)
        self._held_lock = threading.Lock()
        # Hands a grant to its acquire's future, or gives it back when the caller gave up: never
        # both (reentrant: a future's callbacks may give up on it from inside).
        self._handoff = threading.RLock()
        self._closed = False
        self.yield_leases = yield_leases
        # Outcomes of leases given up while the broker was gone, for ReportOutcomes.
        self._replay: "collections.deque[pb.ObservedOutcome]" = collections.deque(maxlen=MAX_REPLAY)
        # Their releases, owed to the broker: sent when it is back, so that it frees their pairs
        # (their outcomes with them) rather than keeping them closed for the rest of their TTL.
        self._owed: "collections.deque[pb.ReleaseLeaseRequest]" = collections.deque(maxlen=MAX_REPLAY)
        self._replay_lock = threading.Lock()
        self._watching = False  # a check whether the broker is gone runs
        self._replaying = False  # a thread sends what is owed to the broker
        self._replay_wanted = False  # ... and should look again when it is done
        self._stream = LeaseStream(
            lambda requests: self.stub.Lease(requests, wait_for_ready=True),
            self._abandon_unmatched,
            on_break=self._stream_broke if yield_leases else None,
            greeting=lambda: self._ping_request(self._liveness.heard_time),
            on_answer=self._liveness.answered,
            on_pong=lambda pong: self._liveness.pong(pong.time),
            on_revoked=self._revoked,
        )
        self._liveness.start()
        self._heartbeats = Heartbeats(self._send_renew, clock)
        #: The pool's domain policies as the broker has them (their response expectations
        #: classify answers: :meth:`BrokerPolicies.rules_for`), fetched in the background.
        self.policies = BrokerPolicies(self.stub, pool, timeout=request_timeout)

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
        no answer came within ``max_wait + request_timeout`` (or ``timeout``), or at once while the
        connection is silent (``silent_after``). Given up (the
        timeout, or an exception such as ``KeyboardInterrupt`` while waiting), the acquire is
        abandoned: a grant that still comes is released as ``ABANDONED``.
        """
        fut = self.acquire_async(target, ttl, max_wait, session_key, tier, labels, heartbeat=heartbeat)
        wait = timeout if timeout is not None else (max_wait or 0) + self.request_timeout
        try:
            return fut.result(timeout=wait)
        except FutureTimeout:
            self.abandon_acquire(fut)
            raise BrokerUnavailable(f"no answer from the broker within {wait:.1f} s") from None
        except BrokerError:
            raise
        except BaseException:  # interrupted while waiting: nobody takes the lease any more
            self.abandon_acquire(fut)
            raise

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
    ) -> "AcquireFuture":
        """:meth:`acquire` without blocking: an :class:`AcquireFuture` of the :class:`Lease` (or
        of the error). It has no timeout of its own: give up on it with :meth:`abandon_acquire`
        or ``cancel()`` (a grant that arrives later is released as ``ABANDONED``, never renewed).

        The lease's deadline counts from now, when the acquire is sent: time spent waiting
        inside the broker counts against its TTL. A grant that arrives with less than half its
        time left is first confirmed by a renew (its deadline then counts from that renew).
        """
        req = pb.AcquireLeaseRequest(
            request_id=uuid.uuid4().hex,
            worker_id=self.worker_id,
            pool=self.pool,
            session_key=session_key,
            tier=tier,
            labels=dict(labels or {}),
            yields_leases=self.yield_leases,
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
        out = AcquireFuture(req.request_id)
        if self.yield_leases and self._liveness.silent:  # unreachable: not sent, nothing to wait for
            out.set_exception(BrokerUnavailable(self._silence()))
            return out
        sent_at = self.clock()
        try:
            raw = self._stream.acquire(req)
        except RuntimeError as err:  # the client is closed
            out.set_exception(BrokerUnavailable(str(err)))
            return out

        def answered(f: Future) -> None:
            if f.cancelled():  # the client was closed
                self._settle(out, error=BrokerUnavailable("the client was closed"))
                return
            if f.exception() is not None:  # the broker refused the token
                self._settle(out, error=f.exception())
                return
            kind, body = f.result()
            if kind != "granted":
                self._settle(out, error=denied_error(body))
                return
            lease, state = self._lease_of(body.lease, ttl, sent_at)
            if state.deadline - self.clock() >= (state.ttl - self._margin(state.ttl)) / 2:
                self._settle(out, lease=lease, state=state, beat=beat)
            else:  # it waited long in the broker (or on the way): confirm it first
                self._confirm(out, lease, state, beat)

        raw.add_done_callback(answered)
        return out

    def abandon_acquire(self, fut: "Future[Lease]") -> None:
        """Stop waiting for an :meth:`acquire_async`: a grant that still comes is released as
        ``ABANDONED`` at once and never renewed; a lease already handed to ``fut`` is released."""
        with self._handoff:
            fut._abandoned = True  # type: ignore[attr-defined]
            lease: Optional[Lease] = getattr(fut, "_lease", None)
            if lease is None:
                fut.cancel()
        self._stream.abandon_acquire(fut.request_id)  # type: ignore[attr-defined]
        if lease is not None:
            lease.release_async("ABANDONED")

    def _lease_of(self, msg: pb.Lease, ttl: Optional[float], sent_at: float) -> Tuple[Lease, LeaseState]:
        if ttl is None:  # broker default: derive it from the expiry (same-host clocks assumed)
            ttl_eff = min(max(wire.epoch_of(msg.expire_time) - time.time(), 1.0), 3600.0)
        else:
            ttl_eff = ttl
        state = LeaseState(
            lease_id=msg.lease_id,
            fencing_token=msg.fencing_token,
            ttl=ttl_eff,
            ttl_requested=ttl is not None,
            sent_at=sent_at,
            expire_time=wire.epoch_of(msg.expire_time),
            clock=self.clock,
            margin=self._margin,
            on_end=self._forget,
        )
        return Lease(msg, state, self._link), state

    def _margin(self, ttl: float) -> float:
        return deadline_margin(ttl, self.deadline_margin)

    def _confirm(self, out: AcquireFuture, lease: Lease, state: LeaseState, beat: bool) -> None:
        """Renew a grant that arrived late before handing it over; its deadline then counts
        from this renew."""
        if out._abandoned or out.cancelled():
            self._give_back(lease)
            return
        sent, ttl = self.clock(), state.ttl
        try:
            fut = self._send_renew(state)
        except RuntimeError as err:  # the client is closed
            self._settle(out, error=BrokerUnavailable(str(err)))
            return

        def renewed(f: Future) -> None:
            if f.cancelled():
                self._settle(out, error=BrokerUnavailable("the client was closed"))
                return
            if f.exception() is not None:  # the broker refused the token
                self._give_back(lease)
                self._settle(out, error=f.exception())
                return
            kind, body = f.result()
            state.on_renew_answer(kind, body, sent, ttl)
            if kind == "renewed" and lease.held:
                self._settle(out, lease=lease, state=state, beat=beat)
            elif kind == "denied":
                self._give_back(lease)  # it could not be confirmed: nobody may rely on it
                self._settle(out, error=denied_error(body))
            else:
                self._settle(out, error=LeaseLost(lease.lease_id, lease.lost_reason or "EXPIRED"))

        fut.add_done_callback(renewed)

    def _settle(
        self,
        out: AcquireFuture,
        lease: Optional[Lease] = None,
        state: Optional[LeaseState] = None,
        beat: bool = False,
        error: Optional[BaseException] = None,
    ) -> None:
        """Hand ``lease`` (or ``error``) to ``out``, unless its caller gave up: then the lease is
        released as ABANDONED, without ever being renewed."""
        with self._handoff:
            taken = not out._abandoned and out.set_running_or_notify_cancel()
            if taken and lease is not None and state is not None:
                out._lease = lease
                with self._held_lock:
                    self._held[lease.lease_id] = (lease, state)
                self._heartbeats.add(state, beat)
        if not taken:
            if lease is not None:
                self._give_back(lease)
        elif lease is not None:
            out.set_result(lease)
        else:
            out.set_exception(error or BrokerUnavailable("no answer"))

    def _give_back(self, lease: Lease) -> None:
        """A lease nobody takes: released as ABANDONED at once, best effort."""
        log.info("proxybroker: releasing unclaimed lease %s as ABANDONED", lease.lease_id)
        lease.release_async("ABANDONED")

    def _watch_deadline(self, state: LeaseState) -> None:
        """A release failed: the lease is held again, so its deadline is watched again."""
        with self._held_lock:
            entry = self._held.get(state.lease_id)
        if entry is not None and entry[1] is state and not self._closed:
            self._heartbeats.watch(state)

    def held_leases(self) -> Sequence[Lease]:
        """Leases acquired by this client and neither released nor lost."""
        with self._held_lock:
            return [lease for lease, _ in self._held.values()]

    @property
    def outcomes_to_replay(self) -> int:
        """Outcomes of leases given up while the broker was gone, waiting for the broker (with
        their releases, or for replay)."""
        with self._replay_lock:
            return len(self._replay) + len(self._owed)

    @property
    def streams_opened(self) -> int:
        """How many Lease streams were opened (more than 1 after reconnects)."""
        return self._stream.streams_opened

    def close(self, abandon: bool = True, timeout: float = 2.0) -> None:
        """Stop heartbeats and close the stream and channel.

        With ``abandon`` (default) the leases still held are first released as ``ABANDONED``
        (best effort, ``timeout`` seconds for all) and the broker is told that this worker leaves
        (``LeavePool``: it no longer counts among the live workers that fallback shares are
        computed over); otherwise the leases stay with the broker until their TTL runs out.
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
            try:
                self.stub.LeavePool(
                    pb.LeavePoolRequest(pool=self.pool, worker_id=self.worker_id),
                    timeout=max(0.1, deadline - time.monotonic()),
                )
            except grpc.RpcError as err:
                log.info("proxybroker: could not say goodbye to the broker on close: %s", err.code())
        self._liveness.stop()
        self._heartbeats.stop()
        self._stream.close()
        self._raw_channel.close()

    def __enter__(self) -> "BrokerClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- used by the leases (through _Link) and the heartbeat thread ------------------------

    def _send_renew(self, state: LeaseState) -> Future:
        # worker_id: the broker counts the renewing worker as live, and extends no lease of it on a
        # proxy it holds in reserve for another worker's fallback share (an empty one: on none).
        req = pb.RenewLeaseRequest(lease_id=state.lease_id, fencing_token=state.fencing_token, worker_id=self.worker_id)
        ttl = state.renew_ttl()
        if ttl is not None:
            req.ttl.CopyFrom(wire.duration(ttl))
        return self._stream.lease_op(state.lease_id, "renew", pb.LeaseRequest(renew=req))

    def _send_release(self, state: LeaseState, outcome: pb.Outcome) -> Future:
        req = pb.ReleaseLeaseRequest(lease_id=state.lease_id, fencing_token=state.fencing_token, outcome=outcome)
        return self._stream.lease_op(state.lease_id, "release", pb.LeaseRequest(release=req))

    # -- when the broker is gone -----------------------------------------------------------

    def _stream_broke(self) -> None:
        """The Lease stream broke: in a thread, check whether the broker is gone (its channel not
        ready again soon); if so, give up every held lease, then replay outcomes once it is back."""
        with self._replay_lock:
            if self._watching or self._closed:
                return
            self._watching = True
        threading.Thread(target=self._watch_broker, name="proxybroker-gone", daemon=True).start()

    def _went_silent(self) -> None:
        """The connection carried no answer for ``silent_after`` (the liveness thread): the broker,
        or the network to it, is gone however open the connection looks. As when the broker is
        gone: every held lease is given up, and what waits for an answer fails now."""
        if self._closed:
            return
        if not self.yield_leases:
            log.warning("proxybroker: %s; keeping the leases (yield_leases=False)", self._silence())
            return
        log.warning("proxybroker: %s", self._silence())
        self._stream.fail_acquires(BrokerUnavailable(self._silence()))
        self._yield_held("the connection is silent")

    def _heard_again(self) -> None:
        """The broker answered after a silence: the releases and outcomes owed to it go out now."""
        log.info("proxybroker: the broker answers again")
        if self.yield_leases:
            self._replay_soon()

    def _silence(self) -> str:
        return f"no answer from the broker for {self.silent_after:.1f} s: the broker is unreachable"

    def _ping_request(self, heard_time: Optional[timestamp_pb2.Timestamp]) -> pb.LeaseRequest:
        """A liveness ping echoing the latest pong's time; no fallback pool, so never a claim."""
        ping = pb.Ping(worker_id=self.worker_id, pool=self.pool, fallback_pool=False)
        if heard_time is not None:
            ping.heard_time.CopyFrom(heard_time)
        return pb.LeaseRequest(ping=ping)

    def _send_ping(self, heard_time: Optional[timestamp_pb2.Timestamp]) -> None:
        self._stream.ping(self._ping_request(heard_time))

    def _revoked(self, lease_id: str) -> None:
        """The broker took a held lease back unasked (its pair was reserved for a silent worker,
        and the broker released the lease): lost at once, never released again by this client."""
        with self._held_lock:
            entry = self._held.get(lease_id)
        if entry is None:
            return
        lease, state = entry
        log.info("proxybroker: lease %s of %s revoked by the broker", lease_id, lease.proxy.id)
        state.mark_lost("REVOKED")

    def _watch_broker(self) -> None:
        try:
            ready = grpc.channel_ready_future(self._raw_channel)
            try:
                ready.result(timeout=GONE_AFTER)
            except grpc.FutureTimeoutError:
                self._yield_held()
                while not self._closed:
                    try:
                        ready.result(timeout=1.0)
                        break
                    except grpc.FutureTimeoutError:
                        continue
            finally:
                ready.cancel()
            if not self._closed:
                self._replay_soon()
        finally:
            with self._replay_lock:
                self._watching = False

    def _yield_held(self, why: str = "the broker is gone") -> None:
        """Give up every held lease (the broker is unreachable): workers in fallback may take the proxies."""
        n = 0
        for lease, state in self._held_pairs():
            if state.mark_yielded():
                n += 1
                log.debug("proxybroker: gave up lease %s of %s (%s)", lease.lease_id, lease.proxy.id, why)
        if n > 0:
            log.warning("proxybroker: %s: gave up %d held lease(s); released there when it is back", why, n)

    def _held_pairs(self) -> Sequence[Tuple[Lease, LeaseState]]:
        with self._held_lock:
            return list(self._held.values())

    def _report_later(self, lease: Lease, outcome: pb.Outcome) -> None:
        owed = pb.ReleaseLeaseRequest(lease_id=lease.lease_id, fencing_token=lease.fencing_token, outcome=outcome)
        with self._replay_lock:
            if len(self._owed) < MAX_REPLAY:
                self._owed.append(owed)
            else:
                self._replay.append(self._observed(lease.proxy.id, lease.domain, outcome))
        if not self._liveness.silent and not self._watching:
            self._replay_soon()  # the broker answers (the request finished after it was back)

    def _replay_soon(self) -> None:
        """Send what is owed to the broker in a thread; one at a time, and once more when asked
        again meanwhile (what a send that failed kept waits for the next answer after a silence)."""
        with self._replay_lock:
            if self._closed:
                return
            self._replay_wanted = True
            if self._replaying:
                return
            self._replaying = True
        threading.Thread(target=self._replay_run, name="proxybroker-replay", daemon=True).start()

    def _replay_run(self) -> None:
        while True:
            with self._replay_lock:
                if not self._replay_wanted or self._closed:
                    self._replaying = False
                    return
                self._replay_wanted = False
            try:
                self._flush_replay()
            except Exception:  # keep the flag consistent whatever happens
                log.exception("proxybroker: sending what is owed to the broker failed")

    @staticmethod
    def _observed(proxy_id: str, domain: str, outcome: pb.Outcome) -> pb.ObservedOutcome:
        observed = pb.ObservedOutcome(proxy_id=proxy_id, domain=domain, outcome=outcome)
        observed.observe_time.CopyFrom(wire.timestamp(time.time()))
        return observed

    def _flush_replay(self) -> None:
        """Send the releases and outcomes kept while the broker was gone; what fails is kept."""
        if self._release_owed():
            self._replay_outcomes()

    def _release_owed(self) -> bool:
        """Release the given-up leases on the broker (an expired one still takes its outcome).
        False when the broker cannot be reached again (the rest stays owed)."""
        while True:
            with self._replay_lock:  # kept until answered (it still counts as owed meanwhile)
                if not self._owed:
                    return True
                req = self._owed[0]
            try:
                self.stub.ReleaseLease(req, timeout=self.request_timeout)
            except grpc.RpcError as err:
                if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    return False
                # lost: expired (its outcome counted all the same) or gone with the store's data
            with self._replay_lock:
                if self._owed and self._owed[0] is req:
                    self._owed.popleft()

    def _replay_outcomes(self) -> None:
        """Send the outcomes kept for ReportOutcomes; what fails is kept."""
        while True:
            with self._replay_lock:
                chunk = [self._replay.popleft() for _ in range(min(REPLAY_CHUNK, len(self._replay)))]
            if not chunk:
                return
            try:
                self.stub.ReportOutcomes(
                    pb.ReportOutcomesRequest(pool=self.pool, worker_id=self.worker_id, outcomes=chunk),
                    timeout=self.request_timeout,
                )
            except grpc.RpcError as err:
                log.info("proxybroker: replaying %d outcome(s) failed: %s", len(chunk), err.code())
                with self._replay_lock:
                    self._replay.extendleft(reversed(chunk))
                return

    def _forget(self, state: LeaseState) -> None:
        with self._held_lock:
            entry = self._held.get(state.lease_id)
            if entry is not None and entry[1] is state:
                del self._held[state.lease_id]

    def _abandon_unmatched(self, msg: pb.Lease) -> None:
        """A grant nobody waits for any more (its acquire was given up): give it back at once."""
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
