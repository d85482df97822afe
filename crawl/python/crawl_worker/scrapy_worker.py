"""A crawl-harness worker process: Scrapy + ProxyBroker over the shared Redis page queue.

    /usr/bin/python3 crawl/python/crawl_worker/scrapy_worker.py '<config JSON>'

The configuration (last argv) and the JSON report lines on stdout are those of the TypeScript
workers (crawl/workers/common.ts). With ``leaseTtlMs`` in the configuration (the long-download
check) every lease asks for that TTL and may wait up to 30 s in the broker; otherwise the broker's
default TTL and at most 5 s. Scrapy's own log goes to stderr.
"""

from __future__ import annotations

import os
import sys

if __package__ in (None, ""):
    # Run as a script: import `crawl_worker` from crawl/python and `proxybroker_client` from
    # clients/python, and nothing from this directory as a top-level module (it would shadow the
    # standard library).
    _here = os.path.dirname(os.path.abspath(__file__))
    _repo = os.path.dirname(os.path.dirname(os.path.dirname(_here)))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    sys.path.insert(0, os.path.join(_repo, "clients", "python"))
    sys.path.insert(0, os.path.dirname(_here))

from scrapy.crawler import CrawlerProcess  # noqa: E402

from crawl_worker.config import WorkerConfig, parse_config  # noqa: E402
from crawl_worker.spider import QueueSpider  # noqa: E402

MAX_WAIT_PAGES = 5.0
MAX_WAIT_LONG = 30.0


def settings_for(config: WorkerConfig) -> dict:
    c = config.concurrency
    return {
        "LOG_LEVEL": os.environ.get("CRAWL_SCRAPY_LOG_LEVEL", "WARNING"),
        "ROBOTSTXT_OBEY": False,
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,  # a URL not accepted goes back to the queue instead
        "REDIRECT_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        "USER_AGENT": "proxybroker-crawl-worker (scrapy)",
        "CONCURRENT_REQUESTS": c,
        "CONCURRENT_REQUESTS_PER_DOMAIN": c,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "DOWNLOAD_TIMEOUT": config.timeout,
        "DOWNLOAD_HANDLERS": {
            "http": "crawl_worker.handler.NoKeepAliveHandler",
            "https": "crawl_worker.handler.NoKeepAliveHandler",
        },
        "DOWNLOADER_MIDDLEWARES": {"crawl_worker.middleware.CrawlBrokerMiddleware": 610},
        "PROXYBROKER_ADDRESS": config.broker_address,
        "PROXYBROKER_POOL": "default",
        "PROXYBROKER_WORKER_ID": config.worker_id,
        "PROXYBROKER_MAX_WAIT": MAX_WAIT_LONG if config.lease_ttl is not None else MAX_WAIT_PAGES,
        "PROXYBROKER_TTL": config.lease_ttl,
        "CRAWL_END_AT": config.end_at,
        "CRAWL_HEARTBEAT": config.heartbeat,
    }


def main() -> int:
    config = parse_config(sys.argv)
    process = CrawlerProcess(settings_for(config))
    process.crawl(QueueSpider, config=config)
    process.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
