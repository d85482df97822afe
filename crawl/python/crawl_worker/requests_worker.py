"""A crawl-harness gateway client in Python ``requests``: a crawler that knows nothing of ProxyBroker.

    /usr/bin/python3 crawl/python/crawl_worker/requests_worker.py '<config JSON>'

The configuration (last argv) and the JSON report lines on stdout are those of the TypeScript
workers (crawl/workers/common.ts); ``gatewayAddress`` is the proxy. One thread per crawl loop
(``concurrency``), loop j popping from ``queueKeys[j % len]``. Plain HTTP: an absolute-form GET
through the gateway, the wait for a proxy in ``X-ProxyBroker-Max-Wait``. HTTPS (``https`` in the
configuration): a ``CONNECT`` through the gateway and TLS to the site inside it, trusting the test
CA, the wait in the proxy username (``wait-5``, any password). Plain HTTP: a new connection per
request. HTTPS, ``https.connection``:
``keep-alive`` (default), one ``requests.Session`` per thread, so one kept-alive tunnel per loop;
``per-request``, ``requests.get`` with no session, so one connection (and one ``CONNECT``, one
lease in tunnel mode) per request, closed after the answer was read. A ``503`` from the gateway
(to the request, or to the ``CONNECT``) means no proxy was free within the wait: the URL goes back
to its queue without a report.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Optional

import redis
import requests

#: crawl/sites.ts CONTENT_MARKER
CONTENT_MARKER = '<div id="content">'
MAX_WAIT_S = 5.0


def emit(lock: threading.Lock, line: dict) -> None:
    with lock:
        sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
        sys.stdout.flush()


class Loop:
    """One crawl loop (a thread): pop, fetch, report, put back what was not accepted."""

    def __init__(self, config: dict, queue: str, out: threading.Lock) -> None:
        self.config = config
        self.queue = queue
        self.out = out
        self.redis = redis.Redis.from_url(config["redisUrl"], decode_responses=True, socket_timeout=5)
        gateway = config["gatewayAddress"]
        https = config.get("https")
        self.https = https is not None
        self.verify = https["caFile"] if https is not None else True
        # plain HTTP: a new connection per request, as the TypeScript gateway clients
        self.keep_alive = https is not None and https.get("connection", "keep-alive") == "keep-alive"
        user = f"wait-{int(MAX_WAIT_S)}:x@" if self.https else ""
        proxy = f"http://{user}{gateway}"
        self.proxies = {"http": proxy, "https": proxy}
        self.timeout = config["timeoutMs"] / 1000.0 + MAX_WAIT_S
        self.session: Optional[requests.Session] = None

    def get(self, url: str) -> requests.Response:
        headers = {}
        if not self.https:
            left = max(0.001, min(MAX_WAIT_S, self.config["endAt"] / 1000.0 - time.time()))
            headers["X-ProxyBroker-Max-Wait"] = f"{left:.3f}"
        if not self.keep_alive:
            # no session: a new connection for this request, closed once the answer was read
            return requests.get(url, proxies=self.proxies, verify=self.verify, timeout=self.timeout, headers=headers)
        if self.session is None:
            self.session = requests.Session()
        return self.session.get(url, proxies=self.proxies, verify=self.verify, timeout=self.timeout, headers=headers)

    def drop(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def attempt(self, url: str) -> Optional[dict]:
        """The report of one try, or None when no proxy was free (retry later)."""
        try:
            r = self.get(url)
        except requests.exceptions.ProxyError as err:
            self.drop()
            if "503" in str(err):
                return None
            return {"proxy": "", "status": 0, "accepted": False, "real": False}
        except requests.exceptions.RequestException:
            self.drop()
            return {"proxy": "", "status": 0, "accepted": False, "real": False}
        proxy = r.headers.get("x-proxybroker-proxy")
        if r.status_code == 503 and proxy is None:
            return None
        real = CONTENT_MARKER in r.text
        accepted = r.status_code == 200 and real
        report = {"proxy": proxy or "", "status": r.status_code, "accepted": accepted, "real": real}
        source = r.headers.get("x-proxybroker-source")
        if source is not None:
            report["source"] = source
        return report

    def run(self) -> None:
        end_at = self.config["endAt"] / 1000.0
        retry = self.config["retryDelayMs"] / 1000.0
        while time.time() < end_at:
            url = self.redis.lpop(self.queue)
            if url is None:
                time.sleep(0.05)
                continue
            report = self.attempt(url)
            if report is None:
                self.redis.rpush(self.queue, url)
                time.sleep(retry)
                continue
            emit(self.out, {"t": int(time.time() * 1000), "url": url, **report, "worker": self.config["workerId"]})
            if not report["accepted"]:
                self.redis.rpush(self.queue, url)
        self.drop()
        self.redis.close()


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("worker: configuration JSON expected as the last argument")
    config = json.loads(sys.argv[-1])
    keys = config["queueKeys"]
    out = threading.Lock()
    loops = [Loop(config, keys[j % len(keys)], out) for j in range(max(1, int(config["concurrency"])))]
    time.sleep(max(0.0, config["startAt"] / 1000.0 - time.time()))
    threads = [threading.Thread(target=loop.run, daemon=True) for loop in loops]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
