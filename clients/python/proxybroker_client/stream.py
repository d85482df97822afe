"""One reconnecting bidi ``Lease`` stream that correlates answers with requests (internal).

Requests go through a queue that feeds the stream's request iterator; one reader thread consumes
the answers and resolves a :class:`concurrent.futures.Future` per request:

- ``granted`` / ``denied`` (with ``request_id``) answer an acquire;
- ``renewed`` / ``released`` / ``lost`` / ``denied`` (with ``lease_id``) answer a renew or release
  of that lease (``lost`` answers every pending operation of the lease);
- ``pong`` answers a liveness ping (:mod:`.liveness`): matched with nothing, handed to ``on_pong``;
- ``lost`` with reason ``REVOKED`` and no operation of the lease pending was sent unasked: the
  lease's pair was just reserved for another (silent) worker and the broker released the lease;
  it goes to ``on_revoked``.

Every future resolves to ``(kind, message)`` where kind is the answer's oneof case. Every answer,
of any kind, is reported to ``on_answer`` first: the connection carries answers.

When the stream breaks (broker restarted, network), the reader opens a new stream and sends again
every request that has no answer yet. Leases are unaffected: the broker keeps them until their
TTL, and heartbeats continue on the new stream. An acquire whose answer was lost in the break is
sent again under the same ``request_id``: the broker answers it with the lease of the first try
when it granted one (it deduplicates by worker and request id).

An acquire its caller gave up (:meth:`LeaseStream.abandon_acquire`) is never answered to the
caller. If it was not sent yet, it is not sent at all. If it was, its grant, whenever it arrives,
goes to ``on_unmatched_grant`` (the client releases it as ``ABANDONED``); and when the stream
breaks before its answer, it is sent again without ``max_wait`` so that the grant of the first try,
lost with the stream, comes back and is released too (for as long as the broker remembers
request ids).
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable, Deque, Dict, Iterator, Optional, Tuple

import grpc

from .errors import BrokerError
from .gen.proxybroker.v1 import broker_pb2 as pb

log = logging.getLogger("proxybroker_client")

_STOP = object()

#: How long an abandoned acquire is sent again after stream breaks (the broker remembers a request
#: id for 60 s: afterwards a retry could only get a new lease).
ABANDONED_RETRY_S = 55.0


@dataclass
class _Acquire:
    """An acquire without an answer yet."""

    msg: pb.LeaseRequest
    future: Future
    #: number of the stream it was last sent on (0: not sent yet)
    sent_on: int = 0
    #: its caller gave up: the answer is not theirs, a grant is given back
    abandoned_at: Optional[float] = None


class LeaseStream:
    """The multiplexed ``Lease`` stream of one client (internal)."""

    def __init__(
        self,
        open_call: Callable[..., grpc.Call],
        on_unmatched_grant: Callable[[pb.Lease], None],
        min_backoff: float = 0.05,
        max_backoff: float = 2.0,
        on_break: Optional[Callable[[], None]] = None,
        *,
        greeting: Optional[Callable[[], pb.LeaseRequest]] = None,
        on_answer: Optional[Callable[[], None]] = None,
        on_pong: Optional[Callable[[pb.Pong], None]] = None,
        on_revoked: Optional[Callable[[str], None]] = None,
    ) -> None:
        self._open_call = open_call
        self._on_unmatched_grant = on_unmatched_grant
        self._on_break = on_break
        # sent first on every new stream (a ping: its first answer need not wait for the next one)
        self._greeting = greeting
        self._on_answer = on_answer
        self._on_pong = on_pong
        self._on_revoked = on_revoked
        self._ping_waiting = False  # a ping sits in the queue, not yet taken by the stream
        self._min_backoff = min_backoff
        self._max_backoff = max_backoff
        self._lock = threading.Lock()
        self._queue: "queue.SimpleQueue" = queue.SimpleQueue()
        self._acquires: Dict[str, _Acquire] = {}
        self._ops: Dict[str, Deque[Tuple[str, pb.LeaseRequest, Future]]] = {}
        self._call: Optional[grpc.Call] = None
        self._closed = threading.Event()
        #: Number of streams opened so far (1 after the first, +1 per reconnect).
        self.streams_opened = 0
        self._thread = threading.Thread(target=self._run, name="proxybroker-lease-stream", daemon=True)
        self._thread.start()

    # -- sending ---------------------------------------------------------------------------

    def acquire(self, req: pb.AcquireLeaseRequest) -> Future:
        """Send an acquire; the future resolves to ``("granted", LeaseGranted)`` or ``("denied", LeaseDenied)``."""
        fut: Future = Future()
        msg = pb.LeaseRequest(acquire=req)
        with self._lock:
            self._check_open()
            self._acquires[req.request_id] = _Acquire(msg, fut)
            self._queue.put(msg)
        return fut

    def abandon_acquire(self, request_id: str) -> None:
        """The caller gave up on an acquire: its future is never resolved; not sent yet, it is not
        sent at all; a grant that still comes is handed to ``on_unmatched_grant``."""
        with self._lock:
            entry = self._acquires.get(request_id)
            if entry is None or entry.abandoned_at is not None:
                return
            if entry.sent_on == 0:
                del self._acquires[request_id]
            else:
                entry.abandoned_at = time.monotonic()

    def lease_op(self, lease_id: str, kind: str, msg: pb.LeaseRequest) -> Future:
        """Send a renew (``kind="renew"``) or release (``kind="release"``) of one lease."""
        fut: Future = Future()
        with self._lock:
            self._check_open()
            self._ops.setdefault(lease_id, collections.deque()).append((kind, msg, fut))
            self._queue.put(msg)
        return fut

    def ping(self, msg: pb.LeaseRequest) -> None:
        """Send a liveness ping (answered by a pong, matched with nothing). Not queued while the
        previous one still waits to be sent: pings never pile up behind a stalled stream."""
        with self._lock:
            self._check_open()
            if self._ping_waiting:
                return
            self._ping_waiting = True
            self._queue.put(msg)

    def fail_acquires(self, err: BrokerError) -> None:
        """Fail every acquire waiting for an answer with ``err`` (the broker is unreachable). Each is
        given up as by :meth:`abandon_acquire`: not sent yet, it is not sent; a grant that still
        comes (on this stream, or on a new one for a retry of it) goes to ``on_unmatched_grant``."""
        now = time.monotonic()
        with self._lock:
            futures = []
            for request_id, entry in list(self._acquires.items()):
                if entry.abandoned_at is not None:
                    continue
                futures.append(entry.future)
                if entry.sent_on == 0:
                    del self._acquires[request_id]
                else:
                    entry.abandoned_at = now
        for f in futures:
            if f.set_running_or_notify_cancel():
                f.set_exception(err)

    def close(self) -> None:
        """End the stream; pending requests fail with ``CancelledError``."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
            self._queue.put(_STOP)
            call = self._call
            futures = [a.future for a in self._acquires.values() if a.abandoned_at is None]
            futures += [f for ops in self._ops.values() for _, _, f in ops]
            self._acquires.clear()
            self._ops.clear()
        if call is not None:
            call.cancel()
        for f in futures:
            f.cancel()
        self._thread.join(timeout=5)

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise RuntimeError("the client is closed")

    # -- the reader thread -----------------------------------------------------------------

    def _run(self) -> None:
        backoff = self._min_backoff
        while not self._closed.is_set():
            with self._lock:
                if self._closed.is_set():
                    return
                q: "queue.SimpleQueue" = queue.SimpleQueue()
                self._queue = q
                self._ping_waiting = self._greeting is not None
                if self._greeting is not None:
                    q.put(self._greeting())
                # Everything not answered yet goes out again, in the order it was first sent.
                for msg in self._unanswered_acquires():
                    q.put(msg)
                for ops in self._ops.values():
                    for _, msg, _ in ops:
                        q.put(msg)
                self.streams_opened += 1
                call = self._open_call(self._requests(q, self.streams_opened))
                self._call = call
            try:
                for resp in call:
                    backoff = self._min_backoff
                    self._dispatch(resp)
                log.info("proxybroker: Lease stream ended by the broker; reopening")
            except grpc.RpcError as err:
                if self._closed.is_set():
                    return
                log.warning("proxybroker: Lease stream broke (%s); reopening", _describe(err))
                refused = _refused(err)
                if refused is not None:
                    # the broker's answer, not a failure to reach it: what waits gets it now
                    if self._on_answer is not None:
                        self._on_answer()
                    self._fail_pending(refused)
                elif self._on_break is not None:
                    self._on_break()  # the broker may be gone: the client checks
            except Exception:  # a bug in dispatch must not end the client
                log.exception("proxybroker: error on the Lease stream; reopening")
            finally:
                q.put(_STOP)
                call.cancel()
            if self._closed.wait(backoff):
                return
            backoff = min(backoff * 2, self._max_backoff)

    def _fail_pending(self, err: BrokerError) -> None:
        """Fail every acquire and lease operation waiting for an answer with ``err``."""
        with self._lock:
            futures = [a.future for a in self._acquires.values() if a.abandoned_at is None]
            futures += [f for ops in self._ops.values() for _, _, f in ops]
            self._acquires.clear()
            self._ops.clear()
        for f in futures:
            if f.set_running_or_notify_cancel():
                f.set_exception(err)

    def _unanswered_acquires(self) -> Iterator[pb.LeaseRequest]:
        """The acquires to send on a new stream (under the lock): pending ones as they were, and
        abandoned ones without ``max_wait``, to get back the grant of the first try if it was lost
        with the stream (the broker remembers request ids for a while)."""
        now = time.monotonic()
        for request_id, entry in list(self._acquires.items()):
            if entry.abandoned_at is not None:
                if now - entry.abandoned_at > ABANDONED_RETRY_S:
                    del self._acquires[request_id]
                    continue
                if entry.msg.acquire.HasField("max_wait"):
                    retry = pb.LeaseRequest()
                    retry.CopyFrom(entry.msg)
                    retry.acquire.ClearField("max_wait")
                    entry.msg = retry
            yield entry.msg

    def _requests(self, q: "queue.SimpleQueue", stream_no: int) -> Iterator[pb.LeaseRequest]:
        """The request iterator of one stream: the queue's messages until the stop marker, minus
        acquires abandoned before they were sent; acquires are marked as sent on this stream."""
        for msg in _drain(q):
            kind = msg.WhichOneof("kind")
            if kind == "ping":
                with self._lock:
                    if self._queue is q:
                        self._ping_waiting = False
            elif kind == "acquire":
                with self._lock:
                    entry = self._acquires.get(msg.acquire.request_id)
                    if entry is None:
                        continue  # abandoned before it was sent
                    entry.sent_on = stream_no
            yield msg

    def _dispatch(self, resp: pb.LeaseResponse) -> None:
        if self._on_answer is not None:
            self._on_answer()
        case = resp.WhichOneof("kind")
        if case is None:
            return
        body = getattr(resp, case)
        if case == "pong":
            if self._on_pong is not None:
                self._on_pong(body)
            return
        done = []  # (future, result): resolved outside the lock
        unmatched: Optional[pb.Lease] = None
        revoked = False
        with self._lock:
            if case in ("granted", "denied") and body.request_id:
                entry = self._acquires.pop(body.request_id, None)
                if entry is not None and entry.abandoned_at is None:
                    done.append((entry.future, (case, body)))
                elif case == "granted":  # abandoned, or unknown: nobody will use it
                    unmatched = body.lease
            elif case == "lost":
                for _, _, fut in self._ops.pop(body.lease_id, ()):
                    done.append((fut, (case, body)))
                # sent unasked: the broker took the lease back (its pair went to a silent worker)
                revoked = not done and body.reason == pb.LOST_REASON_REVOKED
            elif case in ("renewed", "released", "denied") and body.lease_id:
                want = {"renewed": "renew", "released": "release", "denied": None}[case]
                ops = self._ops.get(body.lease_id)
                if ops:
                    for i, (kind, _, fut) in enumerate(ops):
                        if want is None or kind == want:
                            del ops[i]
                            done.append((fut, (case, body)))
                            break
                    if not ops:
                        del self._ops[body.lease_id]
            else:
                log.warning("proxybroker: uncorrelated answer on the Lease stream: %s", resp)
        for fut, result in done:
            if fut.set_running_or_notify_cancel():
                fut.set_result(result)
        if case == "released" and body.WhichOneof("next") is not None:
            # Releases with `next` are not issued by this client; a grant there is unexpected.
            nxt = getattr(body, body.WhichOneof("next"))
            if body.WhichOneof("next") == "granted":
                unmatched = nxt.lease
        if unmatched is not None:
            self._on_unmatched_grant(unmatched)
        if revoked and self._on_revoked is not None:
            self._on_revoked(body.lease_id)


def _drain(q: "queue.SimpleQueue"):
    """The request iterator of one stream: the queue's messages until the stop marker."""
    while True:
        msg = q.get()
        if msg is _STOP:
            return
        yield msg


def _refused(err: grpc.RpcError) -> Optional[BrokerError]:
    """A ``BrokerError`` when the stream was refused for its token (UNAUTHENTICATED, PERMISSION_DENIED)."""
    try:
        code = err.code()
        details = err.details() or ""
    except Exception:  # not a grpc.Call
        return None
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return BrokerError(code.name, details)
    return None


def _describe(err: grpc.RpcError) -> str:
    try:
        return f"{err.code().name}: {err.details()}"
    except Exception:  # not a grpc.Call
        return repr(err)
