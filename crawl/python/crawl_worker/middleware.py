"""``ProxyBrokerMiddleware`` as the crawl harness uses it.

On top of the client's middleware: the outcome it releases with is kept in
``request.meta['crawl_outcome']`` (the worker accepts a page when it is ``SUCCESS``, like the
TypeScript workers), the wait inside the broker never runs past the end of the run
(``CRAWL_END_AT``, epoch seconds; at most ``PROXYBROKER_MAX_WAIT``), and ``CRAWL_HEARTBEAT``
(default True) turns the lease heartbeats off for the long-download control run.
"""

from __future__ import annotations

import time

from proxybroker_client.classify import Classification
from proxybroker_client.scrapy_middleware import ProxyBrokerMiddleware

META_OUTCOME = "crawl_outcome"


class CrawlBrokerMiddleware(ProxyBrokerMiddleware):
    @classmethod
    def from_crawler(cls, crawler):
        mw = super().from_crawler(crawler)
        mw.client.heartbeat = crawler.settings.getbool("CRAWL_HEARTBEAT", True)
        mw.max_wait_cap = mw.max_wait
        mw.end_at = crawler.settings.getfloat("CRAWL_END_AT", 0.0)
        return mw

    def process_request(self, request, spider):
        if self.end_at > 0:
            self.max_wait = max(0.001, min(self.max_wait_cap, self.end_at - time.time()))
        return super().process_request(request, spider)

    def classify(self, request, response) -> Classification:
        # Called by process_response for a held lease: the outcome the lease is released with.
        c = super().classify(request, response)
        request.meta[META_OUTCOME] = c.kind
        return c
