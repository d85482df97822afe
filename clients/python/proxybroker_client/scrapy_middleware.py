"""Scrapy downloader middleware that leases a proxy from ProxyBroker for every request.

Enable it before Scrapy's ``HttpProxyMiddleware`` (750), which turns the credentials of
``request.meta['proxy']`` into a ``Proxy-Authorization`` header, and after ``RedirectMiddleware``
(600) so the response is classified and released before a redirect or retry is scheduled::

    DOWNLOADER_MIDDLEWARES = {"proxybroker_client.scrapy_middleware.ProxyBrokerMiddleware": 610}
    PROXYBROKER_ADDRESS = "127.0.0.1:50051"

Settings: ``PROXYBROKER_ADDRESS``, ``PROXYBROKER_POOL`` (``default``), ``PROXYBROKER_WORKER_ID``
(``$WORKER_ID`` or hostname-pid-starttime), ``PROXYBROKER_MAX_WAIT`` (seconds to wait inside the
broker for a free proxy, 30), ``PROXYBROKER_TTL`` (seconds, broker default when unset),
``PROXYBROKER_TIER``, ``PROXYBROKER_LABELS`` (dict), ``PROXYBROKER_BLOCK_PATTERNS`` (regexes),
``PROXYBROKER_ENABLED`` (True).

Per request (``request.meta``): ``proxybroker_session`` (sticky session key),
``proxybroker_skip`` (True: no proxy from the broker); set by the middleware:
``proxy`` (the lease's proxy URL) and ``proxybroker_lease`` (the :class:`Lease`).

The reactor never blocks: the acquire is sent on the client's stream and its answer comes back as
a Deferred (no thread of the reactor's pool waits on it), releases are sent without waiting. A
request that gets no proxy within ``PROXYBROKER_MAX_WAIT`` fails with
:class:`~proxybroker_client.NoProxyAvailable` (handled like any download error).
"""

from __future__ import annotations

import logging
import time
from typing import Optional

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import defer, reactor

from .classify import DEFAULT_BLOCK_PATTERNS, classify, compile_patterns
from .client import BrokerClient
from .errors import BrokerUnavailable
from .lease import Lease

log = logging.getLogger("proxybroker_client.scrapy")

META_LEASE = "proxybroker_lease"
META_SESSION = "proxybroker_session"
META_SKIP = "proxybroker_skip"
_META_STARTED = "_proxybroker_started"


class ProxyBrokerMiddleware:
    """Leases a proxy per request, classifies the answer, releases the lease with its outcome."""

    def __init__(
        self,
        client: BrokerClient,
        max_wait: float = 30.0,
        ttl: Optional[float] = None,
        tier: str = "",
        labels: Optional[dict] = None,
        block_patterns=DEFAULT_BLOCK_PATTERNS,
    ) -> None:
        self.client = client
        self.max_wait = max_wait
        self.ttl = ttl
        self.tier = tier
        self.labels = dict(labels or {})
        self.block_pattern = compile_patterns(block_patterns)

    @classmethod
    def from_crawler(cls, crawler):
        s = crawler.settings
        if not s.getbool("PROXYBROKER_ENABLED", True):
            raise NotConfigured("PROXYBROKER_ENABLED is off")
        ttl = s.get("PROXYBROKER_TTL")
        client = BrokerClient(
            s.get("PROXYBROKER_ADDRESS", "127.0.0.1:50051"),
            pool=s.get("PROXYBROKER_POOL", "default"),
            worker_id=s.get("PROXYBROKER_WORKER_ID") or None,
        )
        mw = cls(
            client,
            max_wait=s.getfloat("PROXYBROKER_MAX_WAIT", 30.0),
            ttl=float(ttl) if ttl not in (None, "") else None,
            tier=s.get("PROXYBROKER_TIER", ""),
            labels=s.getdict("PROXYBROKER_LABELS"),
            block_patterns=s.getlist("PROXYBROKER_BLOCK_PATTERNS", list(DEFAULT_BLOCK_PATTERNS)),
        )
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        return mw

    def spider_closed(self, spider) -> None:
        # Leases still held (requests cut off by the shutdown) are released as ABANDONED.
        self.client.close(abandon=True)

    # -- the downloader hooks --------------------------------------------------------------

    def process_request(self, request, spider):
        if request.meta.get(META_SKIP):
            return None
        old = request.meta.get(META_LEASE)
        if isinstance(old, Lease) and old.held:
            # Re-sent without going through process_response (another middleware): give it back.
            self._release(old, "ABANDONED")
        fut = self.client.acquire_async(
            request.url,
            ttl=self.ttl,
            max_wait=self.max_wait,
            session_key=request.meta.get(META_SESSION, "") or "",
            tier=self.tier,
            labels=self.labels,
        )
        d = _deferred_of(fut)
        timeout = self.max_wait + self.client.request_timeout

        def on_timeout(failure):
            failure.trap(defer.TimeoutError)
            self.client.abandon_acquire(fut)
            raise BrokerUnavailable(f"no answer from the broker within {timeout:.1f} s")

        d.addTimeout(timeout, reactor)
        d.addErrback(on_timeout)

        def leased(lease: Lease):
            request.meta[META_LEASE] = lease
            request.meta["proxy"] = lease.proxy_url
            request.meta[_META_STARTED] = time.monotonic()
            if lease.session_rebound:
                log.info("proxybroker: session %r moved to proxy %s", lease.session_key, lease.proxy.id)
            return None

        return d.addCallback(leased)

    def process_response(self, request, response, spider):
        lease = request.meta.get(META_LEASE)
        if isinstance(lease, Lease) and lease.held:
            kind, retry_after = classify(
                response.status,
                response.body,
                retry_after=response.headers.get(b"Retry-After"),
                location=response.headers.get(b"Location"),
                block_pattern=self.block_pattern,
            )
            self._release(lease, kind, response.status, retry_after, self._latency(request), len(response.body))
        return response

    def process_exception(self, request, exception, spider):
        lease = request.meta.get(META_LEASE)
        if isinstance(lease, Lease) and lease.held:
            self._release(lease, "PROXY_ERROR", detail=f"{type(exception).__name__}: {exception}"[:200],
                          latency=self._latency(request))
        return None

    # -- helpers ---------------------------------------------------------------------------

    def _release(self, lease: Lease, kind: str, status: int = 0, retry_after=None, latency=None, size=0, detail=""):
        fut = lease.release_async(kind, http_status=status, retry_after=retry_after, latency=latency, bytes=size, detail=detail)

        def done(f):
            err = f.exception()
            if err is not None:
                log.warning("proxybroker: release of %s as %s failed: %s", lease.lease_id, kind, err)

        fut.add_done_callback(done)

    @staticmethod
    def _latency(request) -> Optional[float]:
        started = request.meta.get(_META_STARTED)
        return time.monotonic() - started if started is not None else None


def _deferred_of(fut) -> defer.Deferred:
    """A Deferred fired in the reactor thread with the concurrent Future's result or error."""
    d = defer.Deferred()

    def done(f):
        if f.cancelled():
            reactor.callFromThread(d.errback, BrokerUnavailable("acquire cancelled"))
            return
        err = f.exception()
        if err is not None:
            reactor.callFromThread(d.errback, err)
        else:
            reactor.callFromThread(d.callback, f.result())

    fut.add_done_callback(done)
    return d
