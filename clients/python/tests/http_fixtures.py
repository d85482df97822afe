"""A tiny target site and a tiny HTTP forward proxy, both on loopback, for middleware tests."""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List

PAGES = {
    "/ok": (200, "text/html", "<html><body><p class=price>42</p></body></html>"),
    "/captcha": (200, "text/html", "<html><body>Please solve the CAPTCHA to continue</body></html>"),
    "/missing": (404, "text/plain", "not here"),
    "/slow-down": (429, "text/plain", "too many requests"),
}


class _Target(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        status, ctype, body = PAGES.get(path, PAGES["/missing"])
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if status == 429:
            self.send_header("Retry-After", "7")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


class _Proxy(BaseHTTPRequestHandler):
    """Forwards absolute-URI GETs (what a client sends to an HTTP proxy) and records them."""

    seen: List[str]

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        if not url.scheme or not url.hostname:
            self.send_error(400, "absolute URI expected")
            return
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=10)
        try:
            conn.request("GET", url.path + (f"?{url.query}" if url.query else ""), headers={"Host": url.netloc})
            res = conn.getresponse()
            data = res.read()
        finally:
            conn.close()
        self.send_response(res.status)
        for name, value in res.getheaders():
            if name.lower() not in ("connection", "transfer-encoding", "content-length", "server", "date"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


class Server:
    """A ThreadingHTTPServer on a free loopback port, served by a daemon thread."""

    def __init__(self, handler) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.seen = []  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def seen(self) -> List[str]:
        return self.httpd.seen  # type: ignore[attr-defined]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def target_site() -> Server:
    return Server(_Target)


def forward_proxy() -> Server:
    return Server(_Proxy)
