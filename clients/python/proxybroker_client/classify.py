"""Classify an HTTP answer seen through a leased proxy into an outcome kind.

Rules (the TypeScript SDK's, minus its per-domain statistics):

- 407 → ``PROXY_ERROR`` (the proxy refused us);
- 429 → ``RATE_LIMITED`` with the target's ``Retry-After`` (seconds or HTTP date);
- 403 → ``BLOCKED``;
- 404, 5xx and other 4xx → ``TARGET_ERROR``;
- 2xx / 3xx → ``SUCCESS``, unless the body or a redirect's ``Location`` matches a
  captcha/block pattern → ``BLOCKED``.
"""

from __future__ import annotations

import email.utils
import re
import time
from typing import Iterable, Optional, Pattern, Tuple, Union

#: Default block-page patterns (case-insensitive), matched against the first 64 KiB of the body
#: and against a redirect's Location.
DEFAULT_BLOCK_PATTERNS = (
    r"captcha",
    r"are you a (ro)?bot",
    r"unusual traffic",
    r"access denied",
    r"request (was )?blocked",
    r"verify you are (a )?human",
    r"验证码",
)

BODY_SCAN_LIMIT = 64 * 1024


def compile_patterns(patterns: Iterable[str]) -> Optional[Pattern[str]]:
    """One case-insensitive regex of all ``patterns`` (None when there are none)."""
    parts = [p for p in patterns if p]
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE) if parts else None


_DEFAULT = compile_patterns(DEFAULT_BLOCK_PATTERNS)


def parse_retry_after(value: Union[str, bytes, None], now: Optional[float] = None) -> Optional[float]:
    """A ``Retry-After`` header (delay seconds or HTTP date) as seconds from now, or None."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def classify(
    status: int,
    body: Union[bytes, str] = b"",
    retry_after: Union[str, bytes, None] = None,
    location: Union[str, bytes, None] = None,
    block_pattern: Optional[Pattern[str]] = _DEFAULT,
) -> Tuple[str, Optional[float]]:
    """``(outcome kind, retry_after seconds or None)`` for one HTTP answer."""
    if status == 407:
        return "PROXY_ERROR", None
    if status == 429:
        return "RATE_LIMITED", parse_retry_after(retry_after)
    if status == 403:
        return "BLOCKED", None
    if status >= 400 or status < 200:
        return "TARGET_ERROR", None
    if block_pattern is not None:
        if isinstance(location, bytes):
            location = location.decode("latin-1")
        if location and block_pattern.search(location):
            return "BLOCKED", None
        text = body[:BODY_SCAN_LIMIT]
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if text and block_pattern.search(text):
            return "BLOCKED", None
    return "SUCCESS", None
