"""The shared state of one held lease: its deadline, its ``lost`` event, and its renew and release
in flight. The :class:`~proxybroker_client.lease.Lease` handle, the client and the heartbeat
thread all read and update it, through the public names below.

A lease's **deadline** is kept on the client's monotonic clock: ``sent + ttl - margin``, where
``sent`` is when the acquire (or the last renew the broker confirmed) was *sent*. The broker
cannot have expired the lease before then, whatever the network delay of its answer and whatever
the skew between this host's wall clock and the broker's (or Redis's). At the deadline the lease
counts as lost (``lost`` is set, reason ``EXPIRED``) unless a renewal confirmed it meanwhile.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Callable, Optional

from . import wire
from .gen.proxybroker.v1 import broker_pb2 as pb

#: The smallest safety margin (seconds) between a lease's deadline and the end of its TTL.
MIN_DEADLINE_MARGIN = 0.2


def deadline_margin(ttl: float, minimum: float = MIN_DEADLINE_MARGIN) -> float:
    """How long before the end of its TTL a lease is given up: ``max(minimum, 10 % of ttl)``, at
    most a quarter of the TTL (a heartbeat every ttl/3 must still be answered before it)."""
    return min(max(minimum, 0.1 * ttl), ttl / 4)


def lost_reason_of(body: pb.LeaseLost) -> str:
    """The reason of a ``LeaseLost`` answer: ``EXPIRED``, ``REVOKED`` or ``NOT_FOUND``."""
    return wire.short_name(pb.LostReason, body.reason, "LOST_REASON_")


class LeaseState:
    """What the handle, the client and the heartbeat thread share about one lease.

    ``on_end`` is called (with this state) when the lease ends: released, or lost. The fields
    are read and written under ``lock`` where a release and a loss could race.
    """

    def __init__(
        self,
        *,
        lease_id: str,
        fencing_token: int,
        ttl: float,
        ttl_requested: bool,
        sent_at: float,
        expire_time: float,
        clock: Callable[[], float],
        margin: Callable[[float], float],
        on_end: Callable[["LeaseState"], None],
    ) -> None:
        self.lease_id = lease_id
        self.fencing_token = fencing_token
        #: Seconds, for heartbeats; a renew asks for it when it was requested (``renew_ttl``).
        self.ttl = ttl
        self.ttl_requested = ttl_requested
        #: Epoch seconds, broker clock: for display only.
        self.expire_time = expire_time
        self.clock = clock
        self.margin = margin
        self.lock = threading.Lock()
        self.lost = threading.Event()
        self.lost_reason: Optional[str] = None
        #: Given up because the broker was unreachable (:meth:`mark_yielded`): its outcome is kept
        #: for replay instead of being released.
        self.yielded = False
        self.released = False
        #: Renewed by the client's heartbeats.
        self.heartbeat = False
        #: A heartbeat renew is in flight.
        self.renewing = False
        #: The release in flight, if any.
        self.release_future: Optional[Future] = None
        # Before it the broker cannot have expired the lease (sent_at is no later than its grant).
        self.deadline = sent_at + ttl - margin(ttl)
        self._on_end = on_end

    @property
    def held(self) -> bool:
        """True while neither released nor lost (the deadline has not passed)."""
        return not self.released and not self.check_deadline()

    def renew_ttl(self) -> Optional[float]:
        """The ttl a renew asks for: the requested one, else unset (the lease keeps its own)."""
        return self.ttl if self.ttl_requested else None

    def on_renew_answer(self, kind: str, body: Any, sent: float, ttl: float) -> None:
        """A renew sent at ``sent`` (client clock) asking for ``ttl`` was answered."""
        if kind == "renewed":
            self.expire_time = wire.epoch_of(body.expire_time)
            with self.lock:
                if not self.lost.is_set():  # a lease given up at its deadline stays given up
                    self.deadline = max(self.deadline, sent + ttl - self.margin(ttl))
        elif kind == "lost":
            self.mark_lost(lost_reason_of(body))

    def check_deadline(self) -> bool:
        """Mark the lease lost (``EXPIRED``) when its deadline has passed while it is held and
        no release was sent; True when it is lost."""
        if self.lost.is_set():
            return True
        if self.released or self.release_future is not None or self.clock() < self.deadline:
            return False
        return self.mark_lost("EXPIRED")

    def mark_lost(self, reason: str) -> bool:
        """The lease is lost for ``reason`` (the first reason stays); always True."""
        with self.lock:
            if self.lost.is_set():
                return True
            self.lost_reason = reason
            self.lost.set()
        self._on_end(self)
        return True

    def mark_yielded(self) -> bool:
        """The broker is unreachable: the lease is given up at once (lost, ``REVOKED``), so that
        workers with a fallback pool may take its proxy; its outcome is reported later. False when
        it had ended already."""
        with self.lock:
            if self.lost.is_set() or self.released:
                return False
            self.yielded = True
        return self.mark_lost("REVOKED")

    def mark_released(self) -> None:
        """The broker answered the release (released, or already lost)."""
        with self.lock:
            self.released = True
        self._on_end(self)
