"""The response expectations of the broker's domain policies, as the Python client applies them:
fetched in the background from a real broker process, laid over the classifier's rules exactly
as the TypeScript SDK lays them (the parity table checks the rules; this checks the fetching)."""

from __future__ import annotations

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from broker_process import BrokerProcess  # noqa: E402
from scrapy.http import HtmlResponse, Request  # noqa: E402

from proxybroker_client import BrokerClient  # noqa: E402
from proxybroker_client.classify import DEFAULT_RULES, classify_response  # noqa: E402
from proxybroker_client.gen.proxybroker.v1 import admin_pb2 as admin_pb  # noqa: E402
from proxybroker_client.gen.proxybroker.v1 import broker_pb2 as pb  # noqa: E402
from proxybroker_client.policy_rules import BrokerPolicies, find_policy, rule_host  # noqa: E402
from proxybroker_client.scrapy_middleware import ProxyBrokerMiddleware  # noqa: E402

broker: BrokerProcess


def setUpModule() -> None:
    global broker
    broker = BrokerProcess().start()


def tearDownModule() -> None:
    broker.stop()


def eventually(check, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def kind_of(rules, body: str) -> str:
    return classify_response(200, url="http://a.shop.example/p", body=body, rules=rules).kind


class FindPolicyTest(unittest.TestCase):
    def test_the_exact_host_then_the_longest_suffix_then_the_star(self) -> None:
        patterns = ("*", "*.example.com", "*.shop.example.com", "a.shop.example.com")
        policies = [pb.DomainPolicy(pattern=p) for p in patterns]
        self.assertEqual(find_policy(policies, "A.Shop.Example.com.").pattern, "a.shop.example.com")
        self.assertEqual(find_policy(policies, "b.shop.example.com:8080").pattern, "*.shop.example.com")
        self.assertEqual(find_policy(policies, "shop.example.com").pattern, "*.example.com")
        self.assertEqual(find_policy(policies, "example.com").pattern, "*")
        self.assertIsNone(find_policy(policies[1:], "example.com"))
        self.assertEqual(rule_host("bücher.example"), "xn--bcher-kva.example")


class BrokerPoliciesTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = BrokerClient(broker.address, worker_id="py-policies")
        self.addCleanup(self.client.close)

    def set_policy(self, **expectations) -> None:
        self.client.admin.SetDomainPolicy(
            admin_pb.SetDomainPolicyRequest(
                policy=pb.DomainPolicy(pattern="*.shop.example", expectations=pb.ResponseExpectations(**expectations))
            ),
            timeout=5,
        )

    def test_fetches_the_policies_and_follows_a_change(self) -> None:
        self.set_policy(required_markers=["#product"])
        policies = BrokerPolicies(self.client.stub, "default", refresh=0.1)
        page = "<p>no product here</p>"
        # the first call starts the fetch and gets the base rules meanwhile: never blocks
        self.assertIs(policies.rules_for("a.shop.example", DEFAULT_RULES), DEFAULT_RULES)

        def shop(body: str) -> str:
            return kind_of(policies.rules_for("a.shop.example", DEFAULT_RULES), body)

        self.assertTrue(eventually(lambda: shop(page) == "BLOCKED"))
        self.assertEqual(shop('<div id="product">x</div>'), "SUCCESS")
        # hosts the policy does not cover keep the base rules
        self.assertIs(policies.rules_for("other.example", DEFAULT_RULES), DEFAULT_RULES)
        # a change of the policy (seen as a new version) is fetched again
        self.set_policy(block_markers=["access denied"])
        self.assertTrue(eventually(lambda: shop(page) == "SUCCESS"))
        self.assertEqual(shop("<p>Access Denied</p>"), "BLOCKED")

    def test_the_scrapy_middleware_classifies_by_the_policy(self) -> None:
        self.set_policy(required_markers=["#product"], min_bytes=10)
        mw = ProxyBrokerMiddleware(self.client)
        request = Request("http://a.shop.example/p/1")

        def kind() -> str:
            response = HtmlResponse(request.url, status=200, body=b"<p>nothing to see here</p>", request=request)
            return mw.classify(request, response).kind

        self.assertTrue(eventually(lambda: kind() == "BLOCKED"), kind())


if __name__ == "__main__":
    unittest.main()
