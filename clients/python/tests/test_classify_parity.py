"""The shared table of classifier cases (test/fixtures/classify-cases.json at the repository
root), run against the Python classifier. The TypeScript SDK runs the same table in
test/sdk/classify/classify-parity.test.ts, so the two classify alike with their default rules, and
with a domain policy's response expectations laid over them (a case's "policy")."""

from __future__ import annotations

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
sys.path.insert(0, PKG_ROOT)

from proxybroker_client.classify import DEFAULT_RULES, classify_response  # noqa: E402
from proxybroker_client.gen.proxybroker.v1 import broker_pb2 as pb  # noqa: E402
from proxybroker_client.policy_rules import expectation_rules  # noqa: E402

CASES_FILE = os.path.join(HERE, "..", "..", "..", "test", "fixtures", "classify-cases.json")
KINDS = {"SUCCESS", "RATE_LIMITED", "BLOCKED", "PROXY_ERROR", "TARGET_ERROR"}


def load_cases() -> list:
    with open(CASES_FILE, encoding="utf-8") as f:
        cases = json.load(f)
    if not isinstance(cases, list):
        raise TypeError(f"{CASES_FILE}: not a list")
    names = [c["name"] for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"{CASES_FILE}: case names appear twice: {duplicates}")
    for c in cases:
        if c["expect"]["kind"] not in KINDS:
            raise ValueError(f"case {c['name']!r}: unknown kind {c['expect']['kind']!r}")
    return cases


def run_case(case: dict, as_bytes: bool):
    r = case["response"]
    e = case.get("expectations", {})
    body = r.get("body")
    if body is not None and as_bytes:
        body = body.encode("utf-8")
    now = case.get("now")
    policy = case.get("policy")
    rules = DEFAULT_RULES
    if policy is not None:
        rules = expectation_rules(
            DEFAULT_RULES,
            pb.ResponseExpectations(
                block_markers=policy.get("blockMarkers", []),
                required_markers=policy.get("requiredMarkers", []),
                min_bytes=policy.get("minBytes", 0),
                slow_down_patterns=policy.get("slowDownPatterns", []),
            ),
        )
    return classify_response(
        r["status"],
        url=r["url"],
        request_url=r.get("requestUrl"),
        headers=r.get("headers", {}),
        body=body,
        body_bytes=r.get("bodyBytes"),
        markers=e.get("markers"),
        min_bytes=e.get("minBytes"),
        rules=rules,
        now=None if now is None else now / 1000,
    )


class ClassifyParityTest(unittest.TestCase):
    cases = load_cases()

    def test_the_table_has_enough_cases(self) -> None:
        self.assertGreaterEqual(len(self.cases), 30)

    def test_every_case(self) -> None:
        for case in self.cases:
            for as_bytes in (False, True):
                with self.subTest(case["name"], body="bytes" if as_bytes else "str"):
                    got = run_case(case, as_bytes)
                    expect = case["expect"]
                    self.assertEqual(got.kind, expect["kind"], got.reason)
                    if "retryAfterMs" in expect:
                        # The TypeScript classifier says 0 for "no delay"; Python None (or 0.0).
                        self.assertAlmostEqual(
                            got.retry_after or 0.0, expect["retryAfterMs"] / 1000, places=6, msg=got.reason
                        )


class ClassifyResponseInputsTest(unittest.TestCase):
    """What the Scrapy middleware hands over: bytes headers with lists of values, a bytes body."""

    def test_scrapy_style_headers(self) -> None:
        headers = {b"Retry-After": [b"30"], b"Content-Type": [b"text/plain"]}
        got = classify_response(429, url="https://a.example/", headers=headers, body=b"")
        self.assertEqual((got.kind, got.retry_after), ("RATE_LIMITED", 30.0))
        proxy = {b"Proxy-Status": [b"cdn.example; received-status=502", b"gw.example; error=connection_refused"]}
        self.assertEqual(classify_response(502, url="https://a.example/", headers=proxy).kind, "PROXY_ERROR")

    def test_body_bytes_counts_over_a_truncated_body(self) -> None:
        got = classify_response(200, url="https://a.example/", body=b"x" * 10, body_bytes=5000, min_bytes=1000)
        self.assertEqual(got.kind, "SUCCESS")
        small = classify_response(200, url="https://a.example/", body=None, body_bytes=10, min_bytes=1000)
        self.assertEqual(small.kind, "BLOCKED")

    def test_malformed_marker_is_an_error(self) -> None:
        with self.assertRaises(ValueError):
            classify_response(200, url="https://a.example/", body="<p>x</p>", markers=["css:div > p"])


if __name__ == "__main__":
    unittest.main()
