"""Run by test_scrapy_middleware in a subprocess: crawl the given URLs through ProxyBroker.

argv: broker address, pool, output JSON file, URL... Writes one record per response or error.
"""

import json
import sys

import scrapy
from scrapy.crawler import CrawlerProcess

address, pool, out_file, *urls = sys.argv[1:]
records = []


class Spider(scrapy.Spider):
    name = "pbtest"

    def start_requests(self):
        for i, url in enumerate(urls):
            meta = {"proxybroker_session": "s-1"} if "session" in url else {}
            yield scrapy.Request(url, callback=self.parse, errback=self.failed, meta=meta, dont_filter=True)

    def parse(self, response):
        lease = response.meta.get("proxybroker_lease")
        records.append({
            "url": response.url,
            "status": response.status,
            "proxy": response.meta.get("proxy"),
            "lease_id": lease.lease_id if lease else None,
            "lease_proxy_url": lease.proxy_url if lease else None,
            "released": bool(lease and lease.released),
        })

    def failed(self, failure):
        error = type(failure.value).__name__
        records.append({"url": failure.request.url, "error": error, "detail": str(failure.value)})

    def closed(self, reason):
        with open(out_file, "w") as f:
            json.dump(records, f)


process = CrawlerProcess(settings={
    "DOWNLOADER_MIDDLEWARES": {"proxybroker_client.scrapy_middleware.ProxyBrokerMiddleware": 610},
    "PROXYBROKER_ADDRESS": address,
    "PROXYBROKER_POOL": pool,
    "PROXYBROKER_WORKER_ID": "scrapy-test",
    "PROXYBROKER_MAX_WAIT": 10,
    "PROXYBROKER_TTL": 5,
    "HTTPERROR_ALLOW_ALL": True,
    "RETRY_ENABLED": False,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
    "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
})
process.crawl(Spider)
process.start()
