"""One timer thread that renews every held lease every ttl/3 (internal).

A heartbeat sends a renew without waiting for it; the answer updates the lease (new expiry, or
``lost``). While a renew is unanswered (stream down) no second one is sent: the stream sends it
again once it is back. A lease whose local deadline (last confirmed renew + ttl) passes without
an answer is marked lost with reason ``EXPIRED``: the broker has expired it by then.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import TYPE_CHECKING, Callable, List, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Future

    from .lease import Lease

log = logging.getLogger("proxybroker_client")


class Heartbeats:
    """Schedules renews of held leases (internal)."""

    def __init__(self, send_renew: Callable[["Lease"], "Future"]) -> None:
        self._send_renew = send_renew
        self._cond = threading.Condition()
        self._heap: List[Tuple[float, int, "Lease"]] = []
        self._seq = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="proxybroker-heartbeats", daemon=True)
        self._thread.start()

    def add(self, lease: "Lease") -> None:
        """Start renewing ``lease`` every ttl/3 until it is released or lost."""
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + lease.ttl / 3, next(self._seq), lease))
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    timeout = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(timeout)
                if self._stopped:
                    return
                _, _, lease = heapq.heappop(self._heap)
            if not lease.held:
                continue
            try:
                self._beat(lease)
            except Exception:  # never let one lease stop the others' heartbeats
                log.exception("proxybroker: heartbeat of %s failed", lease.lease_id)
            if lease.held:
                with self._cond:
                    heapq.heappush(self._heap, (time.monotonic() + lease.ttl / 3, next(self._seq), lease))

    def _beat(self, lease: "Lease") -> None:
        now = time.monotonic()
        if now > lease._deadline:
            log.warning("proxybroker: lease %s expired without a confirmed renew", lease.lease_id)
            lease._mark_lost("EXPIRED")
            return
        if lease._renewing:
            return
        lease._renewing = True
        fut = self._send_renew(lease)

        def done(f: "Future") -> None:
            lease._renewing = False
            if f.cancelled():
                return
            kind, body = f.result()
            lease._on_renew_answer(kind, body, now)

        fut.add_done_callback(done)
