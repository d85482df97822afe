"""One JSON line per request on stdout, the harness's ``FetchReport`` (crawl/workers/common.ts)."""

from __future__ import annotations

import json
import sys
import time

#: crawl/sites.ts CONTENT_MARKER: ground truth for "the body really is the page".
CONTENT_MARKER = b'<div id="content">'


def emit(worker: str, url: str, proxy: str, status: int, accepted: bool, body: bytes = b"") -> None:
    """One report line of worker ``worker`` (the configuration's ``workerId``)."""
    line = json.dumps(
        {
            "t": int(time.time() * 1000),
            "url": url,
            "proxy": proxy,
            "status": status,
            "accepted": accepted,
            "real": CONTENT_MARKER in body,
            "worker": worker,
        },
        separators=(",", ":"),
    )
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
