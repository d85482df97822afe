"""ProxyBrokerMiddleware in a real Scrapy crawl (subprocess) through a real local forward proxy
registered in a real broker; plus the classifier's rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
sys.path.insert(0, PKG_ROOT)

from broker_process import BrokerProcess  # noqa: E402
from http_fixtures import forward_proxy, target_site  # noqa: E402

from proxybroker_client import BrokerClient, NoProxyAvailable  # noqa: E402
from proxybroker_client.classify import classify, compile_patterns, parse_retry_after  # noqa: E402
from proxybroker_client.gen.proxybroker.v1 import admin_pb2  # noqa: E402


class ClassifyTest(unittest.TestCase):
    def test_rules(self) -> None:
        self.assertEqual(classify(200, b"<p>fine</p>"), ("SUCCESS", None))
        self.assertEqual(classify(301, b"", location=b"https://x.example/next"), ("SUCCESS", None))
        self.assertEqual(classify(302, b"", location=b"https://x.example/captcha?r=1"), ("BLOCKED", None))
        # Not a default pattern (the SDK's defaults: "验证码" is also the SMS code of login forms) ...
        self.assertEqual(classify(200, "请输入验证码".encode()), ("SUCCESS", None))
        # ... but a block pattern can say so.
        self.assertEqual(classify(200, "请输入验证码".encode(), block_pattern=compile_patterns(["验证码"])), ("BLOCKED", None))
        self.assertEqual(classify(200, b"Are you a robot?"), ("BLOCKED", None))
        self.assertEqual(classify(403, b""), ("BLOCKED", None))
        self.assertEqual(classify(429, b"", retry_after=b"12"), ("RATE_LIMITED", 12.0))
        self.assertEqual(classify(429, b""), ("RATE_LIMITED", None))
        self.assertEqual(classify(407, b""), ("PROXY_ERROR", None))
        self.assertEqual(classify(404, b""), ("TARGET_ERROR", None))
        self.assertEqual(classify(503, b"captcha"), ("TARGET_ERROR", None))
        self.assertEqual(classify(200, b"captcha", block_pattern=None), ("SUCCESS", None))

    def test_retry_after_http_date(self) -> None:
        self.assertAlmostEqual(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now=784111767.0), 10.0)
        self.assertIsNone(parse_retry_after("soon"))


class ScrapyMiddlewareTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.broker = BrokerProcess().start()
        cls.target = target_site()
        cls.proxy = forward_proxy()
        cls.pool = f"scrapy-{uuid.uuid4().hex[:8]}"
        cls.proxy_url = f"http://127.0.0.1:{cls.proxy.port}"
        cls.client = BrokerClient(cls.broker.address, pool=cls.pool, worker_id="py-test-scrapy")
        added = cls.client.admin.AddProxies(
            admin_pb2.AddProxiesRequest(pool=cls.pool, proxies=[admin_pb2.ProxySpec(url=cls.proxy_url)]), timeout=5
        )
        assert list(added.added) == [f"127.0.0.1:{cls.proxy.port}"], added

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.proxy.close()
        cls.target.close()
        cls.broker.stop()

    def crawl(self, *urls: str):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            env = dict(os.environ, PYTHONPATH=PKG_ROOT)
            run = subprocess.run(
                [sys.executable, os.path.join(HERE, "scrapy_crawl.py"), self.broker.address, self.pool, out, *urls],
                env=env, capture_output=True, text=True, timeout=120,
            )
            self.assertEqual(run.returncode, 0, run.stderr[-3000:])
            with open(out) as f:
                return json.load(f), run.stderr

    def test_crawl_goes_through_the_leased_proxy_and_releases(self) -> None:
        base = f"http://127.0.0.1:{self.target.port}"
        blocked = f"http://localhost:{self.target.port}/captcha"
        urls = [f"{base}/ok?i={i}" for i in range(3)] + [f"{base}/missing", blocked]
        records, log = self.crawl(*urls)
        self.assertEqual(len(records), len(urls), log[-3000:])
        by_url = {r["url"]: r for r in records}
        for url in urls:
            r = by_url[url]
            self.assertNotIn("error", r, r)
            self.assertEqual(r["proxy"], self.proxy_url, "request.meta['proxy'] is the lease's proxy")
            self.assertEqual(r["lease_proxy_url"], self.proxy_url)
            self.assertTrue(r["lease_id"])
        self.assertEqual(by_url[f"{base}/ok?i=0"]["status"], 200)
        self.assertEqual(by_url[f"{base}/missing"]["status"], 404)
        # The requests really went through the proxy (absolute URIs).
        self.assertEqual(sorted(self.proxy.seen[-len(urls):]), sorted(urls))
        # Released: the only proxy of the pool is free again for 127.0.0.1 ...
        lease = self.client.acquire(base, ttl=5)
        self.assertEqual(lease.proxy.url, self.proxy_url)
        lease.release("SUCCESS")
        # ... and the captcha page was reported BLOCKED: the pair (proxy, localhost) is banned.
        with self.assertRaises(NoProxyAvailable):
            self.client.acquire(blocked, ttl=5)
        stats = self.client.admin.ListProxies(admin_pb2.ListProxiesRequest(pool=self.pool), timeout=5).proxies[0]
        self.assertGreaterEqual(stats.success_count, 3)
        self.assertGreaterEqual(stats.failure_count, 1)

    def test_broker_without_free_proxy_fails_the_request_not_the_crawl(self) -> None:
        host = f"127.0.0.2:{self.target.port}"
        held = self.client.acquire(f"http://{host}/", ttl=30)  # the pool's only proxy, for this host
        try:
            started = time.monotonic()
            records, log = self.crawl(f"http://{host}/ok")
        finally:
            held.release("ABANDONED")
        self.assertEqual(len(records), 1, log[-3000:])
        self.assertEqual(records[0]["error"], "NoProxyAvailable", records)
        self.assertGreaterEqual(time.monotonic() - started, 10, "waited PROXYBROKER_MAX_WAIT inside the broker")


if __name__ == "__main__":
    unittest.main()
