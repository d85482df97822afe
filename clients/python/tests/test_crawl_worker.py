"""The crawl harness's Scrapy worker (crawl/python/crawl_worker) while the broker answers errors:
it backs off instead of asking again in a tight loop, and crawls on once the broker is back.

A real broker on a real redis-server of its own, which the test kills for a while and starts again
(its append-only file keeps the pool): meanwhile every broker call fails at once with UNAVAILABLE.
The worker's page queue is a second redis-server; the pages come from a local site through a local
forward proxy. The broker's own metric counts the calls that failed on the store meanwhile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import unittest
import urllib.request
import uuid
from typing import List, Tuple

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from broker_process import REPO, BrokerProcess, free_port  # noqa: E402
from http_fixtures import forward_proxy, target_site  # noqa: E402
from redis_process import RedisProcess  # noqa: E402

from proxybroker_client import BrokerClient  # noqa: E402
from proxybroker_client.gen.proxybroker.v1 import admin_pb2  # noqa: E402

WORKER = os.path.join(REPO, "crawl", "python", "crawl_worker", "scrapy_worker.py")
CONCURRENCY = 4
OUTAGE_S = 2.0
RUN_S = 10.0


class CrawlWorkerBackoffTest(unittest.TestCase):
    def setUp(self) -> None:
        self.store = RedisProcess(persistent=True)
        self.addCleanup(self.store.stop)
        self.pages = RedisProcess()
        self.addCleanup(self.pages.stop)
        self.metrics = f"127.0.0.1:{free_port()}"
        self.broker = BrokerProcess(
            REDIS_URL=self.store.url,
            REDIS_KEY_PREFIX="pbcrawl",
            LEASE_TTL_DEFAULT_MS="1000",  # after a Redis restart the broker holds grants this long
            METRICS_ADDRESS=self.metrics,
        ).start()
        self.addCleanup(self.broker.stop)
        self.site = target_site()
        self.addCleanup(self.site.close)
        self.proxy = forward_proxy()
        self.addCleanup(self.proxy.close)
        admin = BrokerClient(self.broker.address, worker_id="py-crawl-admin")
        self.addCleanup(admin.close)
        spec = admin_pb2.ProxySpec(url=f"http://127.0.0.1:{self.proxy.port}")
        for attempt in range(5):  # a Redis call past REDIS_COMMAND_TIMEOUT_MS on a busy machine fails
            try:
                admin.admin.AddProxies(admin_pb2.AddProxiesRequest(pool="default", proxies=[spec]), timeout=5)
                break
            except grpc.RpcError:
                if attempt == 4:
                    raise
                time.sleep(0.2)

    def store_failures(self) -> float:
        """``proxybroker_store_unavailable_total``: broker calls that failed on the store."""
        with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=5) as res:
            for line in res.read().decode().splitlines():
                if line.startswith("proxybroker_store_unavailable_total "):
                    return float(line.split()[1])
        return 0.0

    def start_worker(self, queue_key: str) -> Tuple[subprocess.Popen, List[Tuple[float, dict]]]:
        now_ms = int(time.time() * 1000)
        config = {
            "workerId": f"py-crawl-{uuid.uuid4().hex[:6]}",
            "redisUrl": self.pages.url,
            "queueKeys": [queue_key],
            "proxies": [],
            "brokerAddress": self.broker.address,
            "startAt": now_ms,
            "endAt": now_ms + int(RUN_S * 1000),
            "concurrency": CONCURRENCY,
            "timeoutMs": 5000,
            "retryDelayMs": 100,
        }
        proc = subprocess.Popen(
            ["/usr/bin/python3", WORKER, json.dumps(config)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.addCleanup(_kill, proc)
        reports: List[Tuple[float, dict]] = []

        def read() -> None:
            for line in proc.stdout:
                reports.append((time.monotonic(), json.loads(line)))

        threading.Thread(target=read, daemon=True).start()
        return proc, reports

    def test_broker_errors_are_retried_with_backoff_and_the_crawl_goes_on(self) -> None:
        key = f"pages-{uuid.uuid4().hex[:6]}"
        urls = [f"http://127.0.0.1:{self.site.port}/ok?i={i}" for i in range(20_000)]
        subprocess.run(["redis-cli", "-u", self.pages.url, "rpush", key, *urls], check=True, capture_output=True)
        proc, reports = self.start_worker(key)

        give_up = time.monotonic() + 30
        while not any(r["accepted"] for _, r in reports):  # crawling through the broker
            self.assertIsNone(proc.poll(), proc.stderr.read() if proc.poll() is not None else "")
            self.assertLess(time.monotonic(), give_up, "the worker took no page")
            time.sleep(0.05)

        failed_before = self.store_failures()
        self.store.kill()  # the broker answers every call with UNAVAILABLE, at once
        time.sleep(OUTAGE_S)
        failed = self.store_failures() - failed_before
        self.store.start()
        back_at = time.monotonic()

        _, stderr = proc.communicate(timeout=RUN_S + 30)
        self.assertEqual(proc.returncode, 0, stderr[-3000:])
        # Paced: 250 ms, 500 ms, 1 s, 2 s between rounds of at most CONCURRENCY acquires (4 rounds
        # in 2 s, plus a few renews and releases of the leases in flight). Asking again at once
        # makes hundreds.
        self.assertGreater(failed, 0, "the outage was not seen by the broker")
        self.assertLessEqual(failed, 8 * CONCURRENCY, f"{failed:.0f} broker calls failed in {OUTAGE_S} s")
        taken_after = [r for t, r in reports if t > back_at + 0.1 and r["accepted"]]
        self.assertGreater(len(taken_after), 0, "no page after the broker was back:\n" + stderr[-3000:])


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    unittest.main()
