"""The worker configuration the harness passes as the last argv (crawl/workers/common.ts)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class WorkerConfig:
    worker_id: str
    redis_url: str
    #: the page queues; slot j serves queue_keys[j % len(queue_keys)]
    queue_keys: Sequence[str]
    broker_address: str
    start_at: float  # epoch seconds
    end_at: float  # epoch seconds
    concurrency: int
    timeout: float  # seconds
    retry_delay: float  # seconds
    lease_ttl: Optional[float]  # seconds; long-download check only
    heartbeat: bool


def parse_config(argv: Sequence[str] = sys.argv) -> WorkerConfig:
    if len(argv) < 2:
        raise SystemExit("worker: configuration JSON expected as the last argument")
    raw = json.loads(argv[-1])
    ttl_ms = raw.get("leaseTtlMs")
    return WorkerConfig(
        worker_id=raw["workerId"],
        redis_url=raw["redisUrl"],
        queue_keys=tuple(raw["queueKeys"]),
        broker_address=raw["brokerAddress"],
        start_at=raw["startAt"] / 1000.0,
        end_at=raw["endAt"] / 1000.0,
        concurrency=max(1, int(raw["concurrency"])),
        timeout=raw["timeoutMs"] / 1000.0,
        retry_delay=raw["retryDelayMs"] / 1000.0,
        lease_ttl=ttl_ms / 1000.0 if ttl_ms is not None else None,
        heartbeat=bool(raw.get("heartbeat", True)),
    )
