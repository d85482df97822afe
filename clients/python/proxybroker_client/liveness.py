"""Whether the broker still answers this client: liveness pings on the Lease stream (internal).

A TCP connection whose packets are dropped stays open: gRPC notices it only at a call's deadline
or a keepalive timeout, while the worker waits and keeps leases that workers with a fallback pool
are about to take over. So the client pings the broker on its Lease stream twice a second (every
third of its silence bound when that is shorter), and the broker answers each ping at once with a
pong that needs no store. Any
answer counts (a pong, any answer on the stream, any answer to a unary call): a connection that
carries none for ``silent_after`` seconds is *silent*, an outage rather than slowness, and the
client acts as when the broker is gone (docs/spec.md §7). The first answer after it ends the
silence.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Optional

import grpc
from google.protobuf import timestamp_pb2

from . import wire

log = logging.getLogger("proxybroker_client")

#: The default silence bound (seconds), as in the TypeScript SDK.
DEFAULT_SILENT_AFTER = 3.0
#: The shortest silence bound allowed (pings every third of it).
MIN_SILENT_AFTER = 1.0
#: The longest, the same as the TypeScript SDK's (``MAX_SILENT_AFTER_MS``, sdk/src/client/
#: fallback-rules.ts): a worker cut off with this one, serving its claim from its fallback pool,
#: counts on every other client to have stopped using its broker leases within this bound.
MAX_SILENT_AFTER = 3.0
#: The shortest ping period (seconds).
MIN_PING_EVERY = 0.2
#: The longest, as the TypeScript SDK's: every client pings at least twice a second.
MAX_PING_EVERY = 0.5

#: Status codes a call can end with without the broker having answered it.
_UNANSWERED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED})


def check_silent_after(silent_after: float) -> float:
    """``silent_after`` as float seconds, or ``ValueError`` naming it when it is not in
    [MIN_SILENT_AFTER, MAX_SILENT_AFTER]."""
    ok = isinstance(silent_after, (int, float)) and not isinstance(silent_after, bool)
    if not ok or not MIN_SILENT_AFTER <= silent_after <= MAX_SILENT_AFTER:
        raise ValueError(
            f"silent_after must be a number of seconds in [{MIN_SILENT_AFTER}, {MAX_SILENT_AFTER}]: {silent_after!r}"
        )
    return float(silent_after)


class Liveness:
    """Pings the broker and notices when it answers nothing (one thread; internal).

    ``send_ping(heard_time)`` sends a ping echoing the ``Pong.time`` of the latest pong (None
    before the first). ``on_silent`` is called once per silence, in the liveness thread, when no
    answer came for ``silent_after`` seconds; ``on_heard`` when an answer ends a silence, in the
    thread that reported the answer. ``clock`` is a monotonic clock in seconds: the real one, never
    the lease deadlines' injected clock (a test's frozen clock must not make a live broker silent).
    """

    def __init__(
        self,
        silent_after: float,
        send_ping: Callable[[Optional[timestamp_pb2.Timestamp]], None],
        on_silent: Callable[[], None],
        on_heard: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.silent_after = check_silent_after(silent_after)
        #: Seconds between two pings.
        self.ping_every = max(MIN_PING_EVERY, min(MAX_PING_EVERY, self.silent_after / 3))
        self._send_ping = send_ping
        self._on_silent = on_silent
        self._on_heard = on_heard
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._last_answer = clock()  # a new client is given one silence bound to be answered
        self._heard_time: Optional[timestamp_pb2.Timestamp] = None
        self._noticed = False  # the current silence was reported to on_silent
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="proxybroker-liveness", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    @property
    def silent(self) -> bool:
        """No answer came for ``silent_after`` seconds (noticed or about to be)."""
        with self._lock:
            return self._clock() - self._last_answer >= self.silent_after

    def answered(self) -> None:
        """The broker answered something: the connection carries answers."""
        with self._lock:
            self._last_answer = self._clock()
            ended, self._noticed = self._noticed, False
        if ended:
            self._on_heard()

    def pong(self, time_: timestamp_pb2.Timestamp) -> None:
        """A pong with the broker's clock: echoed by the next ping (the latest, never an older one)."""
        with self._lock:
            if self._heard_time is None or wire.epoch_of(time_) >= wire.epoch_of(self._heard_time):
                self._heard_time = time_
        self.answered()

    @property
    def heard_time(self) -> Optional[timestamp_pb2.Timestamp]:
        """The ``Pong.time`` of the latest pong (None before the first): what a ping echoes."""
        with self._lock:
            return self._heard_time

    def _run(self) -> None:
        next_ping = self._clock()
        while not self._stop.is_set():
            now = self._clock()
            if now >= next_ping:
                try:
                    self._send_ping(self.heard_time)
                except Exception:  # the client is closing: the loop ends with it
                    log.debug("proxybroker: ping not sent", exc_info=True)
                next_ping = now + self.ping_every
            if self._check():
                try:
                    self._on_silent()
                except Exception:  # never let the handler end the pings
                    log.exception("proxybroker: handling a silent connection failed")
            with self._lock:
                silent_at = self._last_answer + self.silent_after
                noticed = self._noticed
            # wake for the next ping, or exactly when the connection turns silent
            wake = next_ping if noticed else min(next_ping, silent_at)
            self._stop.wait(max(0.0, wake - self._clock()))

    def _check(self) -> bool:
        """True once per silence: when it is first noticed."""
        with self._lock:
            if self._noticed or self._clock() - self._last_answer < self.silent_after:
                return False
            self._noticed = True
            return True


class ContactInterceptor(grpc.UnaryUnaryClientInterceptor):
    """Counts the answer to every unary call as contact with the broker (``on_answer``): an error
    status the broker sent is an answer too; a call that ended UNAVAILABLE, past its deadline or
    cancelled may never have reached it, and does not count."""

    def __init__(self, on_answer: Callable[[], None]) -> None:
        self._on_answer = on_answer

    def intercept_unary_unary(self, continuation, client_call_details, request):
        call = continuation(client_call_details, request)
        call.add_done_callback(self._done)
        return call

    def _done(self, call) -> None:
        try:
            code = call.code()
        except Exception:  # not a grpc.Call
            return
        if code not in _UNANSWERED:
            self._on_answer()
