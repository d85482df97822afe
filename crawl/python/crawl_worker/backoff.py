"""Paced retries while the broker is unreachable or answers errors."""

from __future__ import annotations

import time
from typing import Callable, Optional


class BrokerBackoff:
    """How long a crawl slot waits before it asks the broker again after an error.

    The first failure of a round sets when the worker may try again (``initial`` seconds later);
    failures of other slots before then wait for that same moment, and the first failure after it
    doubles the pause, up to ``maximum``. An answer from the broker given after the last failure
    (a lease granted then, or "no proxy available") ends the backoff.
    """

    def __init__(self, initial: float = 0.25, maximum: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.initial = initial
        self.maximum = maximum
        self._clock = clock
        self._delay = initial
        self._until = 0.0
        self._failed_at = float("-inf")
        #: failures since the broker last answered
        self.failures = 0

    def failed(self) -> float:
        """A broker call failed: seconds to wait before the next one."""
        now = self._clock()
        self._failed_at = now
        self.failures += 1
        if now < self._until:
            return self._until - now
        self._until = now + self._delay
        delay = self._delay
        self._delay = min(self._delay * 2, self.maximum)
        return delay

    @property
    def active(self) -> bool:
        """True after a failure, until the broker answers again."""
        return self.failures > 0

    def answered(self, at: Optional[float] = None) -> bool:
        """The broker answered (at ``at`` on the same clock; default now): unless that was before
        the last failure, the backoff ends and the next failure starts over at ``initial``.
        True when it ended a backoff."""
        if not self.active or (at is not None and at <= self._failed_at):
            return False
        self._delay = self.initial
        self._until = 0.0
        self.failures = 0
        return True
