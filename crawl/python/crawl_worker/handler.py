"""Scrapy's HTTP/1.1 download handler without keep-alive: one connection per request, as the
TypeScript workers do (tinyproxy serves one request per client connection anyway)."""

from __future__ import annotations

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler


class NoKeepAliveHandler(HTTP11DownloadHandler):
    def __init__(self, settings, crawler=None) -> None:
        super().__init__(settings, crawler)
        self._pool.persistent = False
