"""A spider fed from the shared Redis page queues, ``concurrency`` requests in flight.

The slots are spread over the queues (one per site) as the TypeScript workers' loops are: slot j
serves queue j mod the number of queues, so a slow site never holds up the others. From
``start_at`` on, a 50 ms loop (and every finished request) pops, per queue, as many URLs as it has
free slots and hands them to the engine; until ``end_at`` ``spider_idle`` keeps the spider open,
after it no URL is taken and the spider closes once its requests are done. Every answer or
download error is one report line; a URL not accepted goes back to the tail of the queue. A
request that got no proxy from the broker in time (``NoProxyAvailable``) is put back without a
report and its slot waits ``retry_delay`` (the TypeScript workers' "no-proxy" rule). A request
that got no lease because the broker is unreachable or answered an error (any other
``BrokerError``: no request reached the site) is put back without a report too, and its slot waits
a paced backoff (250 ms, doubling to 2 s, shared by the slots) instead of asking again at once;
the first answer the broker gives after the failure ends the backoff.

A ``/stream`` download counts only when its lease was never lost: the lease's deadline is kept on
the client's monotonic clock, so neither this host's wall clock nor the broker's is consulted.
"""

from __future__ import annotations

import time
from typing import Optional
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from twisted.internet import reactor
from twisted.internet.defer import DeferredList
from twisted.internet.task import LoopingCall

from proxybroker_client.errors import BrokerError, NoProxyAvailable
from proxybroker_client.scrapy_middleware import META_LEASE

from .backoff import BrokerBackoff
from .config import WorkerConfig
from .middleware import META_OUTCOME
from .page_queue import PageQueue
from .report import emit

META_URL = "crawl_url"
META_QUEUE = "crawl_queue"
#: crawl/sites.ts: the last chunk of a complete /stream body.
STREAM_END = b"</pre></div></body></html>"
FILL_INTERVAL = 0.05


class QueueSpider(scrapy.Spider):
    name = "crawl-queue"

    def __init__(self, config: WorkerConfig, **kwargs) -> None:
        super().__init__(**kwargs)
        self.config = config
        keys = list(config.queue_keys)
        self.queues = [PageQueue(config.redis_url, key) for key in keys]
        #: slots per queue (slot j serves queue j % len(keys)) and requests in flight per queue
        self.slots = [sum(1 for j in range(config.concurrency) if j % len(keys) == q) for q in range(len(keys))]
        self.in_flight_of = [0] * len(keys)
        self.popping = False
        self.closing = False
        self.loop = LoopingCall(self.fill)
        self.backoff = BrokerBackoff()

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.on_opened, signal=signals.spider_opened)
        crawler.signals.connect(spider.on_idle, signal=signals.spider_idle)
        crawler.signals.connect(spider.on_closed, signal=signals.spider_closed)
        return spider

    def start_requests(self):
        return iter(())

    # -- signals -------------------------------------------------------------------------

    def on_opened(self, spider) -> None:
        reactor.callLater(max(0.0, self.config.start_at - time.time()), self.loop.start, FILL_INTERVAL)

    def on_idle(self, spider) -> None:
        if time.time() < self.config.end_at or self.in_flight > 0:
            raise DontCloseSpider()

    @property
    def in_flight(self) -> int:
        return sum(self.in_flight_of)

    def on_closed(self, spider) -> None:
        if self.loop.running:
            self.loop.stop()
        for queue in self.queues:
            queue.close()

    # -- feeding the engine --------------------------------------------------------------

    def fill(self) -> None:
        if self.closing:
            return
        if time.time() >= self.config.end_at:
            if self.in_flight == 0 and not self.popping:
                self.closing = True
                self.crawler.engine.close_spider(self, "finished")
            return
        wanted = [(q, self.slots[q] - self.in_flight_of[q]) for q in range(len(self.queues))]
        wanted = [(q, free) for q, free in wanted if free > 0]
        if not wanted or self.popping:
            return
        self.popping = True
        pops = []
        for q, free in wanted:
            d = self.queues[q].pop(free)
            d.addCallback(self.schedule, q)
            d.addErrback(lambda f: self.logger.warning("queue: %s", f.getErrorMessage()))
            pops.append(d)
        DeferredList(pops).addBoth(self._popped)

    def _popped(self, _):
        self.popping = False

    def schedule(self, urls, q: int) -> None:
        for url in urls:
            self.in_flight_of[q] += 1
            request = scrapy.Request(
                url,
                callback=self.on_response,
                errback=self.on_error,
                dont_filter=True,
                headers={"Connection": "close"},
                meta={META_URL: url, META_QUEUE: q, "handle_httpstatus_all": True, "dont_redirect": True},
            )
            self.crawler.engine.crawl(request)

    def _slot_free(self, q: int) -> None:
        self.in_flight_of[q] -= 1
        self.fill()

    # -- answers -------------------------------------------------------------------------

    def on_response(self, response):
        url = response.meta[META_URL]
        lease = response.meta.get(META_LEASE)
        if lease is not None:
            self._broker_answered(lease.acquired_at)
        accepted = response.meta.get(META_OUTCOME) == "SUCCESS"
        if urlsplit(url).path == "/stream":
            # complete, and its lease not lost (at its deadline, or by the broker's word) before
            # it was released at the end of the body
            intact = lease is not None and not lease.lost.is_set()
            accepted = accepted and response.body.endswith(STREAM_END) and intact
        emit(self.config.worker_id, url, lease.proxy.id if lease is not None else "", response.status, accepted, response.body)
        q = response.meta[META_QUEUE]
        if not accepted:
            self.queues[q].put_back(url)
        self._slot_free(q)

    def on_error(self, failure) -> None:
        url = failure.request.meta[META_URL]
        q = failure.request.meta[META_QUEUE]
        self.queues[q].put_back(url)
        if failure.check(NoProxyAvailable):
            self._broker_answered()
            reactor.callLater(self.config.retry_delay, self._slot_free, q)
            return
        if failure.check(BrokerError):
            # No lease: the broker is unreachable or answered an error. No request reached the site.
            self._broker_failed(failure, q)
            return
        lease = failure.request.meta.get(META_LEASE)
        if lease is not None:
            self._broker_answered(lease.acquired_at)
        emit(self.config.worker_id, url, lease.proxy.id if lease is not None else "", 0, False)
        self._slot_free(q)

    # -- broker errors -------------------------------------------------------------------

    def _broker_failed(self, failure, q: int) -> None:
        delay = self.backoff.failed()
        if self.backoff.failures % 20 == 1:  # the first, then one in 20
            self.logger.warning("broker: %s; retrying in %.2f s (failure %d)", failure.getErrorMessage(), delay, self.backoff.failures)
        reactor.callLater(delay, self._slot_free, q)

    def _broker_answered(self, at: Optional[float] = None) -> None:
        """The broker answered (a lease granted at ``at``, client clock; default now)."""
        failures = self.backoff.failures
        if self.backoff.answered(at):
            self.logger.warning("broker: answering again after %d failures", failures)
