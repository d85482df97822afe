"""Scrapy downloader middleware that leases a proxy from ProxyBroker for every request.

Enable it before Scrapy's ``HttpProxyMiddleware`` (750), which turns the credentials of
``request.meta['proxy']`` into a ``Proxy-Authorization`` header, and after ``RedirectMiddleware``
(600) so the response is classified and released before a redirect or retry is scheduled::

    DOWNLOADER_MIDDLEWARES = {"proxybroker_client.scrapy_middleware.ProxyBrokerMiddleware": 610}
    PROXYBROKER_ADDRESS = "127.0.0.1:50051"

Settings: ``PROXYBROKER_ADDRESS``, ``PROXYBROKER_POOL`` (``default``), ``PROXYBROKER_WORKER_ID``
(``$WORKER_ID`` or hostname-pid-starttime), ``PROXYBROKER_MAX_WAIT`` (seconds to wait inside the
broker for a free proxy, 30), ``PROXYBROKER_TTL`` (seconds, broker default when unset),
``PROXYBROKER_TIER``, ``PROXYBROKER_LABELS`` (dict), ``PROXYBROKER_BLOCK_PATTERNS`` (regexes
replacing the classifier's captcha body patterns), ``PROXYBROKER_ENABLED`` (True),
``PROXYBROKER_TOKEN`` (bearer token), ``PROXYBROKER_TLS_CA`` / ``PROXYBROKER_TLS_CERT`` /
``PROXYBROKER_TLS_KEY`` (PEM file paths: TLS, and mTLS with cert and key),
``PROXYBROKER_SILENT_AFTER`` (seconds in [1, 3], default 3: a connection that carries no answer
from the broker for this long counts as unreachable; see :class:`BrokerClient`'s ``silent_after``).

Each answer is classified by :func:`proxybroker_client.classify.classify_response` (the SDK's
rules) with its URL, the URL first requested (before redirects), its headers and its body (when
textual); the outcome's reason goes with the release as its detail. The response expectations of
the site's domain policy (block markers, required markers, minimum size, slow-down patterns) are
laid over the middleware's rules, as the broker has them (fetched in the background, checked for
a change every 30 s).

Per request (``request.meta``): ``proxybroker_session`` (sticky session key),
``proxybroker_skip`` (True: no proxy from the broker); set by the middleware:
``proxy`` (the lease's proxy URL), ``proxybroker_lease`` (the :class:`Lease`) and, when the lease
was lost before the answer came (its deadline passed without a confirmed renewal, or the broker
said so), ``proxybroker_lost`` (the reason): the proxy may then have been granted to someone else
for the site while the download went on, and the answer is not released with an outcome.

The reactor never blocks: the acquire is sent on the client's stream and its answer comes back as
a Deferred (no thread of the reactor's pool waits on it), releases are sent without waiting. A
request that gets no proxy within ``PROXYBROKER_MAX_WAIT`` fails with
:class:`~proxybroker_client.NoProxyAvailable` (handled like any download error); a lease lost
before the request could use it fails it with :class:`~proxybroker_client.LeaseLost`. When the
acquire is given up (its timeout, or the Deferred is cancelled), a grant that still comes is
released as ``ABANDONED`` and never renewed. While the connection to the broker is silent, requests
fail at once with :class:`~proxybroker_client.BrokerUnavailable`, and the leases held by requests
in flight are given up (their answers are released with their outcomes once the broker is back).
"""

from __future__ import annotations

import logging
import re
import time
from typing import Optional
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import defer, reactor

from .classify import DEFAULT_BLOCK_PATTERNS, Classification, block_rules, classify_response
from .client import AcquireFuture, BrokerClient
from .errors import BrokerUnavailable, LeaseLost
from .lease import Lease
from .liveness import DEFAULT_SILENT_AFTER

log = logging.getLogger("proxybroker_client.scrapy")

META_LEASE = "proxybroker_lease"
META_SESSION = "proxybroker_session"
META_SKIP = "proxybroker_skip"
META_LOST = "proxybroker_lost"
_META_STARTED = "_proxybroker_started"
# Bodies the classifier reads (as the SDK's fetch does); others are classified by size only.
_TEXTUAL = re.compile(r"(text/|application/(json|xml|xhtml|javascript)|[^;]*\+(json|xml))", re.IGNORECASE)


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
        self.rules = block_rules(block_patterns)

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
            token=s.get("PROXYBROKER_TOKEN") or None,
            tls_ca=_read(s.get("PROXYBROKER_TLS_CA")),
            tls_cert=_read(s.get("PROXYBROKER_TLS_CERT")),
            tls_key=_read(s.get("PROXYBROKER_TLS_KEY")),
            silent_after=s.getfloat("PROXYBROKER_SILENT_AFTER", DEFAULT_SILENT_AFTER),
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
        d = _deferred_of(fut, self.client)
        timeout = self.max_wait + self.client.request_timeout

        def on_timeout(failure):
            failure.trap(defer.TimeoutError)
            raise BrokerUnavailable(f"no answer from the broker within {timeout:.1f} s")

        d.addTimeout(timeout, reactor)  # cancels d: the acquire is abandoned
        d.addErrback(on_timeout)

        def leased(lease: Lease):
            if not lease.held:  # lost on its way to the reactor: someone else may get the proxy
                raise LeaseLost(lease.lease_id, lease.lost_reason or "EXPIRED")
            request.meta[META_LEASE] = lease
            request.meta["proxy"] = lease.proxy_url
            request.meta[_META_STARTED] = time.monotonic()
            if lease.session_rebound:
                log.info("proxybroker: session %r moved to proxy %s", lease.session_key, lease.proxy.id)
            return None

        return d.addCallback(leased)

    def process_response(self, request, response, spider):
        lease = request.meta.get(META_LEASE)
        if isinstance(lease, Lease) and (lease.held or lease.yielded):
            # (a lease given up while the broker was gone: its outcome is kept for replay)
            c = self.classify(request, response)
            latency = self._latency(request)
            self._release(lease, c.kind, response.status, c.retry_after, latency, len(response.body), c.reason[:200])
        elif isinstance(lease, Lease) and lease.lost.is_set():
            request.meta[META_LOST] = lease.lost_reason
            log.warning(
                "proxybroker: lease %s of %s was lost (%s) before the answer came",
                lease.lease_id, request.url, lease.lost_reason,
            )
        return response

    def classify(self, request, response) -> Classification:
        """The outcome ``response`` is released with (override to adjust it)."""
        content_type = (response.headers.get(b"Content-Type") or b"text/html").decode("latin-1")
        request_url = (request.meta.get("redirect_urls") or [request.url])[0]
        return classify_response(
            response.status,
            url=response.url,
            request_url=request_url,
            headers=response.headers,
            body=response.body if _TEXTUAL.match(content_type) else None,
            body_bytes=len(response.body),
            # the response expectations of the site's domain policy, when the broker has any
            rules=self.client.policies.rules_for(urlsplit(request_url).hostname or "", self.rules),
        )

    def process_exception(self, request, exception, spider):
        lease = request.meta.get(META_LEASE)
        if isinstance(lease, Lease) and (lease.held or lease.yielded):
            self._release(lease, "PROXY_ERROR", detail=f"{type(exception).__name__}: {exception}"[:200],
                          latency=self._latency(request))
        return None

    # -- helpers ---------------------------------------------------------------------------

    def _release(self, lease: Lease, kind: str, status: int = 0, retry_after=None, latency=None, size=0, detail=""):
        fut = lease.release_async(
            kind, http_status=status, retry_after=retry_after, latency=latency, bytes=size, detail=detail
        )

        def done(f):
            err = f.exception()
            if err is not None:
                log.warning("proxybroker: release of %s as %s failed: %s", lease.lease_id, kind, err)

        fut.add_done_callback(done)

    @staticmethod
    def _latency(request) -> Optional[float]:
        started = request.meta.get(_META_STARTED)
        return time.monotonic() - started if started is not None else None


def _read(path):
    """The bytes of the file at ``path``, or None for an unset setting."""
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def _deferred_of(fut: AcquireFuture, client: BrokerClient) -> defer.Deferred:
    """A Deferred fired in the reactor thread with the acquire's lease or error. Cancelling it
    abandons the acquire (a lease granted meanwhile, or later, is released as ABANDONED).

    The Deferred may have fired already when the future's answer reaches the reactor: cancelled
    (its timeout), it fired with ``CancelledError`` — and cancelling the future on the way
    resolves the future too, as may a grant that raced the timeout. Only the first outcome counts
    (firing a Deferred twice raises ``AlreadyCalledError`` in the reactor)."""
    d = defer.Deferred(canceller=lambda _: client.abandon_acquire(fut))

    def fire(callback, value) -> None:  # in the reactor thread
        if not d.called:
            callback(value)

    def done(f):
        if f.cancelled():
            reactor.callFromThread(fire, d.errback, BrokerUnavailable("acquire cancelled"))
            return
        err = f.exception()
        if err is not None:
            reactor.callFromThread(fire, d.errback, err)
        else:
            reactor.callFromThread(fire, d.callback, f.result())

    fut.add_done_callback(done)
    return d
