"""The shared page queue (a Redis list) from the reactor: every Redis call runs in the reactor's
thread pool, so the reactor never blocks on it."""

from __future__ import annotations

from typing import List

import redis
from twisted.internet import threads
from twisted.internet.defer import Deferred


class PageQueue:
    def __init__(self, redis_url: str, key: str) -> None:
        self._redis = redis.Redis.from_url(redis_url, decode_responses=True, socket_timeout=5)
        self._key = key

    def pop(self, count: int) -> "Deferred[List[str]]":
        """Up to ``count`` URLs from the head (LPOP with a count, Redis ≥ 6.2)."""

        def lpop() -> List[str]:
            return list(self._redis.lpop(self._key, count) or [])

        return threads.deferToThread(lpop)

    def put_back(self, url: str) -> "Deferred[int]":
        """A URL not accepted goes back at the tail (a retry, like the TypeScript workers)."""
        return threads.deferToThread(self._redis.rpush, self._key, url)

    def close(self) -> None:
        self._redis.close()
