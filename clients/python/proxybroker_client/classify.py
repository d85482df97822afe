"""Classify an HTTP answer seen through a leased proxy into an outcome kind.

The rules and their order are those of the TypeScript SDK (``sdk/src/classify/classify.ts``);
``test/fixtures/classify-cases.json`` is one table of cases that both test suites run
(``tests/test_classify_parity.py`` here, ``test/sdk/classify/classify-parity.test.ts`` there).

:func:`classify_response` applies, in order:

1. a 4xx/5xx made by the proxy, not the target: ``X-Squid-Error``, or an RFC 9209
   ``Proxy-Status`` with an ``error`` parameter → ``PROXY_ERROR``; when the proxy says the
   target's name does not resolve or the target is unavailable (``dns``,
   ``destination_not_found``, ``destination_unavailable``) → ``TARGET_ERROR``;
2. ``Rules.status_kinds[status]``, when set, decides alone (``RATE_LIMITED`` with Retry-After);
3. 2xx/3xx: the final URL, or a 3xx's ``Location``, matching a captcha or login URL pattern →
   ``BLOCKED`` (not when the URL the worker asked for, ``request_url``, matches the pattern
   itself: a crawler that fetches ``/login`` on purpose is not being sent there); for 2xx also
   a captcha body → ``BLOCKED``, a body smaller than ``min_bytes`` or missing a marker →
   ``Rules.placeholder_kind`` (``BLOCKED``); otherwise ``SUCCESS``;
4. 407 → ``PROXY_ERROR``; 429 → ``RATE_LIMITED``; 403 → ``BLOCKED``, or ``RATE_LIMITED`` when
   its body says "slow down" (a captcha body keeps it ``BLOCKED``); other 4xx and 5xx →
   ``TARGET_ERROR``.

``RATE_LIMITED`` carries ``Retry-After`` in seconds (delta-seconds, or an HTTP date: IMF-fixdate,
RFC 850 or asctime, measured from ``now``), capped at ``Rules.max_retry_after`` (an hour).

Markers (every one must be in the body): plain text, matched case-insensitively (``text:``
forces text, e.g. ``text:#1``); ``#id``, ``.class``, ``.a.b`` and ``css:tag.class#id`` look for
a start tag carrying them (a textual check with a regular expression, not a DOM parse).

Patterns are compiled ``re`` patterns (``re.IGNORECASE | re.ASCII``, so ``\\b`` and ``\\w`` mean
what they mean in JavaScript) or plain strings matched case-insensitively as substrings.

Differences from the SDK: one set of rules for every host (no per-domain rules), and no running
median of body sizes per host (the SDK's "far below the median" check): only ``min_bytes``.

:func:`classify` is the older, smaller API ``(kind, retry_after seconds or None)`` kept for
existing callers; it wraps :func:`classify_response` without a URL.
"""

from __future__ import annotations

import calendar
import dataclasses
import json
import math
import re
import time
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Pattern, Sequence, Tuple, Union
from urllib.parse import urljoin, urlsplit

TextPattern = Union[Pattern[str], str]

KINDS = ("SUCCESS", "RATE_LIMITED", "BLOCKED", "PROXY_ERROR", "TARGET_ERROR", "ABANDONED")

#: Flags of the built-in patterns and of :func:`block_rules`: like JavaScript's ``/i``.
PATTERN_FLAGS = re.IGNORECASE | re.ASCII

# JavaScript's \s and String.prototype.trim() whitespace (WhiteSpace and LineTerminator).
_JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_WS = "[" + re.escape(_JS_SPACE) + "]"


def _re(source: str) -> Pattern[str]:
    return re.compile(source, PATTERN_FLAGS)


DEFAULT_CAPTCHA_URL_PATTERNS: Tuple[Pattern[str], ...] = (
    _re(r"captcha"), _re(r"/challenge"), _re(r"__cf_chl"), _re(r"/sorry/"),
)
DEFAULT_LOGIN_URL_PATTERNS: Tuple[Pattern[str], ...] = (_re(r"/(?:log[-_]?in|sign[-_]?in|auth)(?:[/?#.;]|\Z)"),)
DEFAULT_CAPTCHA_BODY_PATTERNS: Tuple[Pattern[str], ...] = (
    _re(r"\bcaptcha\b"),
    _re(r"are you a robot"),
    _re(r"not a robot"),
    _re(r"unusual traffic"),
    _re(r"verify you are (?:a )?human"),
)
# JavaScript's "." does not match line terminators.
DEFAULT_SLOW_DOWN_BODY_PATTERNS: Tuple[Pattern[str], ...] = (
    _re(r"slow down"),
    _re(r"too many requests"),
    _re("rate[^\n\r\u2028\u2029]?limit"),
)

#: The default captcha body patterns as regex sources (the default of the Scrapy middleware's
#: ``PROXYBROKER_BLOCK_PATTERNS``, see :func:`block_rules`).
DEFAULT_BLOCK_PATTERNS: Tuple[str, ...] = tuple(p.pattern for p in DEFAULT_CAPTCHA_BODY_PATTERNS)


def _compile_pattern(pattern: TextPattern) -> TextPattern:
    """A string pattern lowercased (matched as a substring), a compiled one as is."""
    if isinstance(pattern, str):
        if pattern == "":
            raise ValueError("an empty string pattern would match everything")
        return pattern.lower()
    if not isinstance(pattern, re.Pattern):
        raise TypeError(f"pattern {pattern!r} is neither a compiled regex nor a string")
    return pattern


def _check_kind(kind: Any, where: str) -> None:
    if kind not in KINDS:
        raise ValueError(f'{where}: "{kind}" is not an outcome kind')


@dataclasses.dataclass(frozen=True)
class Rules:
    """The classifier's rules (the SDK's ``ClassifyRules`` without the size-median fields).

    Derive variants with :func:`dataclasses.replace`, e.g.
    ``dataclasses.replace(DEFAULT_RULES, status_kinds={503: "RATE_LIMITED"})``.
    """

    #: The final URL of a 2xx/3xx (or a 3xx's Location) matching one of these → BLOCKED.
    captcha_url_patterns: Tuple[TextPattern, ...] = DEFAULT_CAPTCHA_URL_PATTERNS
    #: Same for login pages → BLOCKED.
    login_url_patterns: Tuple[TextPattern, ...] = DEFAULT_LOGIN_URL_PATTERNS
    #: A 2xx or 403 body matching one of these is a captcha page → BLOCKED.
    captcha_body_patterns: Tuple[TextPattern, ...] = DEFAULT_CAPTCHA_BODY_PATTERNS
    #: A 403 body matching one of these means "slow down" → RATE_LIMITED.
    slow_down_body_patterns: Tuple[TextPattern, ...] = DEFAULT_SLOW_DOWN_BODY_PATTERNS
    #: An explicit kind for a status code, replacing every built-in rule for it.
    status_kinds: Mapping[int, str] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    #: Response headers (lowercase) that mark a 4xx/5xx as made by the proxy.
    proxy_error_headers: Tuple[str, ...] = ("x-squid-error", "proxy-status")
    #: Markers every 2xx body must contain (a call's ``markers`` replace them).
    markers: Tuple[str, ...] = ()
    #: A 2xx body smaller than this (bytes) is a placeholder page; 0 = off.
    min_bytes: float = 0
    #: What a placeholder page (too small, marker missing) is reported as.
    placeholder_kind: str = "BLOCKED"
    #: Retry-After values above this (seconds) are capped.
    max_retry_after: float = 3600.0

    def __post_init__(self) -> None:
        for name in ("captcha_url_patterns", "login_url_patterns", "captcha_body_patterns", "slow_down_body_patterns"):
            object.__setattr__(self, name, tuple(_compile_pattern(p) for p in getattr(self, name)))
        object.__setattr__(self, "proxy_error_headers", tuple(h.lower() for h in self.proxy_error_headers))
        object.__setattr__(self, "markers", tuple(self.markers))
        kinds = {int(status): kind for status, kind in dict(self.status_kinds).items()}
        for status, kind in kinds.items():
            if not 100 <= status <= 599:
                raise ValueError(f"status_kinds key must be a status in [100, 599], got {status}")
            _check_kind(kind, f"status_kinds[{status}]")
        object.__setattr__(self, "status_kinds", MappingProxyType(kinds))
        _check_kind(self.placeholder_kind, "placeholder_kind")
        for name in ("min_bytes", "max_retry_after"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")


DEFAULT_RULES = Rules()


def block_rules(patterns: Iterable[str]) -> Rules:
    """:data:`DEFAULT_RULES` with the captcha body patterns replaced by ``patterns`` (regex
    sources, compiled with :data:`PATTERN_FLAGS`; empty ones are skipped)."""
    return dataclasses.replace(DEFAULT_RULES, captcha_body_patterns=tuple(_re(p) for p in patterns if p))


class Classification(NamedTuple):
    """The outcome to report and why."""

    kind: str
    #: Seconds to wait (capped); set only for RATE_LIMITED with a valid Retry-After, else None.
    retry_after: Optional[float]
    #: Human-readable, e.g. "429 with Retry-After 30 s", "final URL matches captcha pattern /captcha/i".
    reason: str


# -- patterns ---------------------------------------------------------------------------------


def _find_match(patterns: Sequence[TextPattern], text: str, lower: Optional[str] = None) -> Optional[TextPattern]:
    for p in patterns:
        if isinstance(p, str):
            if lower is None:
                lower = text.lower()
            if p in lower:
                return p
        elif p.search(text):
            return p
    return None


def _describe(pattern: TextPattern) -> str:
    if isinstance(pattern, str):
        return json.dumps(pattern, ensure_ascii=False)
    return f"/{pattern.pattern}/" + ("i" if pattern.flags & re.IGNORECASE else "")


# -- Retry-After --------------------------------------------------------------------------------

_MONTHS = {
    m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))
}
_MON = "(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
_TIME = r"(\d{2}):(\d{2}):(\d{2})"
# Sun, 06 Nov 1994 08:49:37 GMT
_IMF_FIXDATE = _re(rf"(?:mon|tue|wed|thu|fri|sat|sun), (\d{{2}}) {_MON} (\d{{4}}) {_TIME} gmt")
# Sunday, 06-Nov-94 08:49:37 GMT
_RFC_850 = _re(rf"(?:mon|tues|wednes|thurs|fri|satur|sun)day, (\d{{2}})-{_MON}-(\d{{2}}) {_TIME} gmt")
# Sun Nov  6 08:49:37 1994
_ASCTIME = _re(rf"(?:mon|tue|wed|thu|fri|sat|sun) {_MON} ( \d|\d{{2}}) {_TIME} (\d{{4}})")
_DIGITS = re.compile(r"[0-9]+")


def _utc_ms(year: int, month: int, day: int, h: int, m: int, s: int) -> Optional[int]:
    """Epoch ms of a UTC date (``month`` 0-11), or None when the date does not exist."""
    if h > 23 or m > 59 or s > 60 or day < 1:
        return None
    if 0 <= year <= 99:  # as JavaScript's Date.UTC reads a year 0-99
        year += 1900
    if day > calendar.monthrange(year, month + 1)[1]:
        return None
    return calendar.timegm((year, month + 1, day, h, m, min(s, 59), 0, 0, 0)) * 1000


def _parse_http_date_ms(value: str, now_ms: float) -> Optional[int]:
    m = _IMF_FIXDATE.fullmatch(value)
    if m:
        return _utc_ms(int(m[3]), _MONTHS[m[2].lower()], int(m[1]), int(m[4]), int(m[5]), int(m[6]))
    m = _RFC_850.fullmatch(value)
    if m:
        # RFC 9110: a two-digit year more than 50 years in the future is in the past century.
        year = 2000 + int(m[3])
        if year > time.gmtime(now_ms / 1000).tm_year + 50:
            year -= 100
        return _utc_ms(year, _MONTHS[m[2].lower()], int(m[1]), int(m[4]), int(m[5]), int(m[6]))
    m = _ASCTIME.fullmatch(value)
    if m:
        return _utc_ms(int(m[6]), _MONTHS[m[1].lower()], int(m[2].strip()), int(m[3]), int(m[4]), int(m[5]))
    return None


def _retry_after_ms(value: Optional[str], now_ms: float) -> Optional[float]:
    if value is None:
        return None
    v = value.strip(_JS_SPACE)
    if _DIGITS.fullmatch(v):
        ms = float(v) * 1000
        return ms if math.isfinite(ms) else None
    at = _parse_http_date_ms(v, now_ms)
    return None if at is None else max(0.0, at - now_ms)


def parse_retry_after(value: Union[str, bytes, None], now: Optional[float] = None) -> Optional[float]:
    """A ``Retry-After`` header (delta-seconds or HTTP date) as seconds from ``now`` (epoch
    seconds, default the current time); a date in the past gives 0, a missing or invalid value
    None. Not capped."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    ms = _retry_after_ms(value, (time.time() if now is None else now) * 1000)
    return None if ms is None else ms / 1000


# -- markers ------------------------------------------------------------------------------------

_NAME = r"[A-Za-z_-][\w-]*"
_SHORTHAND = re.compile(rf"(?:[#.]{_NAME})+", re.ASCII)
_SELECTOR = re.compile(rf"([A-Za-z][A-Za-z0-9-]*)?((?:[#.]{_NAME})*)", re.ASCII)
_PART = re.compile(rf"[#.]{_NAME}", re.ASCII)
_START_TAG = re.compile(rf"<([A-Za-z][\w:-]*)({_WS}[^>]*)?>", re.ASCII)


class ParsedMarker(NamedTuple):
    """``kind`` "text" (``text`` lowercased) or "selector" (``tag``, ``id``, ``classes``)."""

    kind: str
    text: str = ""
    tag: Optional[str] = None
    id: Optional[str] = None
    classes: Tuple[str, ...] = ()


def _parse_selector(marker: str, source: str) -> ParsedMarker:
    m = _SELECTOR.fullmatch(source)
    if m is None or source == "":
        raise ValueError(f'marker "{marker}" is not a selector of the form tag, #id, .class, tag#id.class')
    parts = _PART.findall(m[2] or "")
    ids = [p[1:] for p in parts if p.startswith("#")]
    if len(ids) > 1:
        raise ValueError(f'marker "{marker}" names more than one id')
    return ParsedMarker(
        "selector",
        tag=m[1].lower() if m[1] is not None else None,
        id=ids[0] if ids else None,
        classes=tuple(p[1:] for p in parts if p.startswith(".")),
    )


def parse_marker(marker: str) -> ParsedMarker:
    """Parse a marker; raises ValueError for an empty marker or a malformed ``css:`` selector."""
    if marker.startswith("text:"):
        text = marker[5:]
        if text == "":
            raise ValueError(f'marker "{marker}" is empty')
        return ParsedMarker("text", text=text.lower())
    if marker.startswith("css:"):
        return _parse_selector(marker, marker[4:].strip(_JS_SPACE))
    if _SHORTHAND.fullmatch(marker):
        return _parse_selector(marker, marker)
    if marker.strip(_JS_SPACE) == "":
        raise ValueError("a marker must not be empty")
    return ParsedMarker("text", text=marker.lower())


def _attribute(attrs: str, name: str) -> Optional[str]:
    unquoted = rf"([^{re.escape(_JS_SPACE)}\"'=<>`]+)"
    m = re.search(rf"(?:^|{_WS}){name}{_WS}*={_WS}*(?:\"([^\"]*)\"|'([^']*)'|{unquoted})", attrs, PATTERN_FLAGS)
    if m is None:
        return None
    return next((g for g in m.groups() if g is not None), None)


def _selector_present(body: str, sel: ParsedMarker) -> bool:
    for m in _START_TAG.finditer(body):
        if sel.tag is not None and m[1].lower() != sel.tag:
            continue
        attrs = m[2] or ""
        if sel.id is not None:
            found = _attribute(attrs, "id")
            if found is None or found.strip(_JS_SPACE) != sel.id:
                continue
        if sel.classes:
            tokens = re.split(f"{_WS}+", _attribute(attrs, "class") or "")
            if not all(c in tokens for c in sel.classes):
                continue
        return True
    return False


def _find_missing_marker(body: str, markers: Sequence[str], lower: Optional[str] = None) -> Optional[str]:
    for marker in markers:
        parsed = parse_marker(marker)
        if parsed.kind == "text":
            if lower is None:
                lower = body.lower()
            if parsed.text not in lower:
                return marker
        elif not _selector_present(body, parsed):
            return marker
    return None


# -- the classifier -----------------------------------------------------------------------------


def _text(value: Union[str, bytes]) -> str:
    return value.decode("latin-1") if isinstance(value, (bytes, bytearray)) else str(value)


def _normalize_headers(headers: Any) -> dict:
    """Lowercase names → values; a list of values (Scrapy's ``Headers``) is joined with ", "."""
    out: dict = {}
    if headers is None:
        return out
    items = headers.items() if hasattr(headers, "items") else headers
    for name, value in items:
        if isinstance(value, (list, tuple)):
            value = ", ".join(_text(v) for v in value)
        out.setdefault(_text(name).lower(), _text(value))
    return out


_TARGET_SIDE = _re(r"dns|destination_not_found|destination_unavailable")


def _proxy_status_error(value: str) -> Optional[str]:
    """The ``error`` parameter of the first Proxy-Status member that has one."""
    for member in value.split(","):
        for param in member.split(";")[1:]:
            kv = param.split("=")  # like JavaScript's split("=", 2): the first two pieces
            k, v = kv[0], (kv[1] if len(kv) > 1 else None)
            if k.strip(_JS_SPACE).lower() == "error" and v is not None and v.strip(_JS_SPACE) != "":
                return re.sub(r'^"|"\Z', "", v.strip(_JS_SPACE))
    return None


def _proxy_made_error(status: int, headers: Mapping[str, str], names: Sequence[str]) -> Optional[Tuple[str, str]]:
    if status < 400:
        return None
    for name in names:
        raw = headers.get(name)
        if raw is None:
            continue
        if name == "proxy-status":
            error = _proxy_status_error(raw)
        else:
            words = raw.strip(_JS_SPACE).split()
            error = words[0] if words else name
        if error is None:
            continue
        if _TARGET_SIDE.search(error):
            return "TARGET_ERROR", f"{status} from the proxy: target unreachable ({name}: {error})"
        return "PROXY_ERROR", f"{status} made by the proxy ({name}: {error})"
    return None


def _rate_limited(status: int, headers: Mapping[str, str], rules: Rules, now_ms: float, why: str) -> Classification:
    raw = headers.get("retry-after")
    if raw is None:
        return Classification("RATE_LIMITED", None, f"{why} without Retry-After")
    ms = _retry_after_ms(raw, now_ms)
    if ms is None:
        invalid = json.dumps(raw, ensure_ascii=False)
        return Classification("RATE_LIMITED", None, f"{why} with invalid Retry-After {invalid}")
    capped = min(ms, rules.max_retry_after * 1000)
    form = "" if re.fullmatch(r"\s*[0-9]+\s*", raw) else " (HTTP date)"
    cap = f", capped to {math.ceil(capped / 1000)} s" if capped < ms else ""
    return Classification("RATE_LIMITED", capped / 1000, f"{why} with Retry-After {math.ceil(ms / 1000)} s{form}{cap}")


def _url_hit(patterns: Sequence[TextPattern], url: str, request_url: Optional[str]) -> Optional[TextPattern]:
    # The worker asked for that page itself: it was not sent there.
    if request_url is not None and _find_match(patterns, request_url) is not None:
        return None
    return _find_match(patterns, url)


_SPECIAL_SCHEMES = ("http", "https", "ws", "wss", "ftp", "file")


def _resolve(location: str, base: str) -> str:
    """``location`` resolved against ``base`` like the SDK's ``new URL(location, base)``, or the
    raw value when ``base`` is not an absolute URL (patterns still apply to it)."""
    try:
        scheme = urlsplit(base).scheme.lower()
        if not scheme:
            return location
        if scheme in _SPECIAL_SCHEMES:  # a backslash before the query is a "/" in these URLs
            cut = min(i for i in (location.find("?"), location.find("#"), len(location)) if i >= 0)
            location = location[:cut].replace("\\", "/") + location[cut:]
        return urljoin(base, location)
    except ValueError:
        return location


def _url_verdict(
    status: int, url: str, request_url: Optional[str], headers: Mapping[str, str], rules: Rules
) -> Optional[str]:
    targets = [("final URL", url)]
    location = headers.get("location") if 300 <= status < 400 else None
    if location is not None:
        targets.append((f"{status} Location", _resolve(location, url)))
    for what, target in targets:
        captcha = _url_hit(rules.captcha_url_patterns, target, request_url)
        if captcha is not None:
            return f"{what} matches captcha pattern {_describe(captcha)}"
        login = _url_hit(rules.login_url_patterns, target, request_url)
        if login is not None:
            return f"{what} matches login pattern {_describe(login)}"
    return None


def _captcha_body(status: int, text: Optional[str], rules: Rules, lower: Optional[str] = None) -> Optional[str]:
    if text is None:
        return None
    p = _find_match(rules.captcha_body_patterns, text, lower)
    return None if p is None else f"{status} body matches captcha pattern {_describe(p)}"


def classify_response(
    status: int,
    *,
    url: str,
    request_url: Optional[str] = None,
    headers: Any = None,
    body: Union[bytes, bytearray, str, None] = None,
    body_bytes: Optional[int] = None,
    markers: Optional[Sequence[str]] = None,
    min_bytes: Optional[float] = None,
    rules: Rules = DEFAULT_RULES,
    now: Optional[float] = None,
) -> Classification:
    """Classify one response (see the module docstring for the rules and their order).

    - ``url``: the final URL (after redirects); ``request_url``: the URL the worker asked for.
    - ``headers``: a mapping or (name, value) pairs, names in any case, values str or bytes (or
      lists of them, as in Scrapy's ``Headers``: joined with ", ").
    - ``body``: bytes (decoded as UTF-8) or text, possibly truncated (then give ``body_bytes``,
      the size of the whole body: a marker not found in a truncated body is not judged missing);
      None when there is no body to look at (HEAD, binary): then neither the body patterns nor
      the markers are checked.
    - ``markers`` / ``min_bytes``: this call's expectations, replacing ``rules.markers`` /
      ``rules.min_bytes``.
    - ``now``: epoch seconds for an HTTP-date Retry-After (default: the current time).

    Raises ValueError for a malformed marker.
    """
    hdrs = _normalize_headers(headers)
    now_ms = (time.time() if now is None else now) * 1000

    if body is None:
        text: Optional[str] = None
        size = body_bytes
        given = 0
    elif isinstance(body, (bytes, bytearray, memoryview)):
        raw = bytes(body)
        text = raw.decode("utf-8", "replace")
        given = len(raw)
        size = given if body_bytes is None else body_bytes
    else:
        text = body
        given = len(body.encode("utf-8", "surrogatepass"))
        size = given if body_bytes is None else body_bytes
    # a marker not found in a truncated body may sit in the part not given: not judged missing
    truncated = body_bytes is not None and given < body_bytes

    by_proxy = _proxy_made_error(status, hdrs, rules.proxy_error_headers)
    if by_proxy is not None:
        return Classification(by_proxy[0], None, by_proxy[1])

    mapped = rules.status_kinds.get(status)
    if mapped is not None:
        why = f"{status} mapped to {mapped} by rule"
        if mapped == "RATE_LIMITED":
            return _rate_limited(status, hdrs, rules, now_ms, why)
        return Classification(mapped, None, why)

    if 200 <= status < 400:
        by_url = _url_verdict(status, url, request_url, hdrs, rules)
        if by_url is not None:
            return Classification("BLOCKED", None, by_url)
        if status < 300:
            lower = text.lower() if text is not None else None
            captcha = _captcha_body(status, text, rules, lower)
            if captcha is not None:
                return Classification("BLOCKED", None, captcha)
            placeholder = rules.placeholder_kind
            if size is not None:
                least = rules.min_bytes if min_bytes is None else min_bytes
                if size < least:
                    return Classification(placeholder, None, f"body of {size} B is below minBytes {least} B")
            wanted = rules.markers if markers is None else markers
            if wanted and text is not None and not truncated:
                missing = _find_missing_marker(text, wanted, lower)
                if missing is not None:
                    marker = json.dumps(missing, ensure_ascii=False)
                    return Classification(placeholder, None, f"marker {marker} missing from the body")
        return Classification("SUCCESS", None, f"{status}")
    if status == 407:
        return Classification("PROXY_ERROR", None, "407 proxy authentication required")
    if status == 429:
        return _rate_limited(status, hdrs, rules, now_ms, "429")
    if status == 403:
        captcha = _captcha_body(status, text, rules)
        if captcha is not None:
            return Classification("BLOCKED", None, captcha)
        slow = None if text is None else _find_match(rules.slow_down_body_patterns, text)
        if slow is not None:
            return _rate_limited(status, hdrs, rules, now_ms, f"403 body matches slow-down pattern {_describe(slow)},")
        return Classification("BLOCKED", None, "403 block page")
    if 400 <= status < 600:
        return Classification("TARGET_ERROR", None, f"{status} from the target")
    return Classification("TARGET_ERROR", None, f"unexpected status {status}")


# -- the older API ------------------------------------------------------------------------------


def compile_patterns(patterns: Iterable[str]) -> Optional[Pattern[str]]:
    """One case-insensitive regex of all ``patterns`` (None when there are none)."""
    parts = [p for p in patterns if p]
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE) if parts else None


_DEFAULT = compile_patterns(DEFAULT_BLOCK_PATTERNS)
_NO_PATTERNS = dataclasses.replace(
    DEFAULT_RULES, captcha_url_patterns=(), login_url_patterns=(), captcha_body_patterns=()
)


def classify(
    status: int,
    body: Union[bytes, str] = b"",
    retry_after: Union[str, bytes, None] = None,
    location: Union[str, bytes, None] = None,
    block_pattern: Optional[Pattern[str]] = _DEFAULT,
) -> Tuple[str, Optional[float]]:
    """``(outcome kind, retry_after seconds or None)`` for one HTTP answer whose URL is unknown:
    :func:`classify_response` with only the ``Retry-After`` and ``Location`` headers.

    ``block_pattern``: the default means :data:`DEFAULT_RULES`; another pattern replaces the
    captcha body and captcha URL patterns (it is matched against the body and a redirect's
    ``Location``); None switches the captcha and login patterns off.
    """
    headers = {}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    if location is not None:
        headers["location"] = location
    if block_pattern is None:
        rules = _NO_PATTERNS
    elif block_pattern == _DEFAULT:
        rules = DEFAULT_RULES
    else:
        rules = dataclasses.replace(
            DEFAULT_RULES, captcha_url_patterns=(block_pattern,), captcha_body_patterns=(block_pattern,)
        )
    c = classify_response(status, url="", headers=headers, body=body, rules=rules)
    return c.kind, c.retry_after
