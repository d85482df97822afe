"""One timer thread for every held lease: heartbeats every ttl/3, and the lease's deadline (internal).

A heartbeat sends a renew without waiting for it; the answer updates the lease (a deadline counted
from the renew's send time, or ``lost``). While a renew is unanswered (stream down) no second one
is sent: the stream sends it again once it is back.

Every lease, with heartbeats or without, is also watched at its deadline (see :mod:`.lease_state`): when
it passes with no renewal confirmed meanwhile, the lease is marked lost with reason ``EXPIRED``,
at that moment, whether or not the broker can be reached.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from concurrent.futures import Future
from typing import Callable, List, Tuple

from .lease_state import LeaseState

log = logging.getLogger("proxybroker_client")

_BEAT = "beat"
_DEADLINE = "deadline"


class Heartbeats:
    """Schedules renews of held leases and gives them up at their deadlines (internal).

    ``clock`` is the monotonic clock leases' deadlines are kept on (the thread waits on real time
    for it; an injected clock is read again whenever the thread wakes).
    """

    def __init__(self, send_renew: Callable[[LeaseState], Future], clock: Callable[[], float] = time.monotonic) -> None:
        self._send_renew = send_renew
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: List[Tuple[float, int, str, LeaseState]] = []
        self._seq = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="proxybroker-heartbeats", daemon=True)
        self._thread.start()

    def add(self, lease: LeaseState, beat: bool = True) -> None:
        """Watch ``lease``'s deadline, and with ``beat`` renew it every ttl/3, until it is released
        or lost. The first renew comes early enough to be answered before the deadline."""
        lease.heartbeat = beat
        self.watch(lease)
        if beat:
            now = self._clock()
            first = min(lease.ttl / 3, max(0.0, lease.deadline - now) / 2)
            self._push(now + first, _BEAT, lease)

    def watch(self, lease: LeaseState) -> None:
        """Give ``lease`` up at its deadline unless a renewal moves it."""
        self._push(lease.deadline, _DEADLINE, lease)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join(timeout=5)

    def _push(self, when: float, kind: str, lease: LeaseState) -> None:
        with self._cond:
            heapq.heappush(self._heap, (when, next(self._seq), kind, lease))
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._heap or self._heap[0][0] > self._clock()):
                    timeout = self._heap[0][0] - self._clock() if self._heap else None
                    self._cond.wait(timeout)
                if self._stopped:
                    return
                _, _, kind, lease = heapq.heappop(self._heap)
            try:
                if kind == _DEADLINE:
                    self._at_deadline(lease)
                else:
                    self._beat(lease)
            except Exception:  # never let one lease stop the others' timers
                log.exception("proxybroker: %s of lease %s failed", kind, lease.lease_id)

    def _at_deadline(self, lease: LeaseState) -> None:
        if lease.released or lease.lost.is_set() or lease.release_future is not None:
            return  # over, or given back (a release that fails watches the deadline again)
        if lease.check_deadline():
            # With heartbeats, none was answered in time; without, the holder kept it too long.
            level = logging.WARNING if lease.heartbeat else logging.INFO
            log.log(level, "proxybroker: lease %s lost: no renewal confirmed before its deadline", lease.lease_id)
            return
        self.watch(lease)  # a renewal moved it

    def _beat(self, lease: LeaseState) -> None:
        if not lease.held:
            return
        if not lease.renewing:
            self._renew(lease)
        if lease.held:
            self._push(self._clock() + lease.ttl / 3, _BEAT, lease)

    def _renew(self, lease: LeaseState) -> None:
        lease.renewing = True
        sent, ttl = self._clock(), lease.ttl
        try:
            fut = self._send_renew(lease)
        except RuntimeError:  # the client is closed
            lease.renewing = False
            return
        fut.add_done_callback(lambda f: self._answered(lease, f, sent, ttl))

    @staticmethod
    def _answered(lease: LeaseState, fut: Future, sent: float, ttl: float) -> None:
        lease.renewing = False
        if fut.cancelled() or fut.exception() is not None:  # closed, or the token refused: the deadline decides
            return
        kind, body = fut.result()
        lease.on_renew_answer(kind, body, sent, ttl)
