"""A silent connection is an outage, and the broker may take a lease back unasked (issue 27).

Against a real broker process (embedded store, sample pool of 5 proxies, WORKER_ABSENT_AFTER_MS
of 1 s); a TCP relay between client and broker goes silent on purpose: nothing passes either way
and every socket stays open, as in a partition that drops packets. Timings have generous margins:
the machine may be busy.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import time
import unittest
import uuid
from typing import Callable, Iterator, List

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
sys.path.insert(0, PKG_ROOT)

from broker_process import BrokerProcess, free_port  # noqa: E402
from tcp_relay import TcpRelay  # noqa: E402

from proxybroker_client import BrokerClient, BrokerUnavailable, NoProxyAvailable, wire  # noqa: E402
from proxybroker_client.gen.proxybroker.v1 import broker_pb2 as pb, broker_pb2_grpc  # noqa: E402

SAMPLE_POOL_SIZE = 5  # examples/proxies.txt
#: How much later than its bound a silence may be noticed here (a busy machine's thread wake-ups).
MARGIN = 1.0

broker: BrokerProcess


def setUpModule() -> None:
    global broker
    # a worker whose last echoed pong is 1 s old counts as silent: its claim is reserved soon
    broker = BrokerProcess(WORKER_ABSENT_AFTER_MS="1000").start()


def tearDownModule() -> None:
    broker.stop()


def fresh_domain() -> str:
    return f"s{uuid.uuid4().hex[:10]}.example.com"


def wait_until(check: Callable[[], bool], within: float) -> bool:
    give_up = time.monotonic() + within
    while not check():
        if time.monotonic() > give_up:
            return False
        time.sleep(0.02)
    return True


class SilentAfterArgumentTest(unittest.TestCase):
    def test_out_of_range_is_a_value_error_naming_the_argument(self) -> None:
        dead = f"127.0.0.1:{free_port()}"
        for bad in (0.0, 0.999, 3.001, 5.0, -3.0, float("nan"), float("inf"), "3", None, True):
            with self.subTest(silent_after=bad):
                with self.assertRaises(ValueError) as ctx:
                    BrokerClient(dead, worker_id="py-silent-arg", silent_after=bad)  # type: ignore[arg-type]
                self.assertIn("silent_after", str(ctx.exception))
        for good in (1.0, 2, 3.0):
            with self.subTest(silent_after=good):
                client = BrokerClient(dead, worker_id="py-silent-arg", silent_after=good)
                self.assertEqual(client.silent_after, float(good))
                client.close(abandon=False)

    def test_the_scrapy_setting(self) -> None:
        from scrapy.utils.test import get_crawler

        from proxybroker_client.scrapy_middleware import ProxyBrokerMiddleware

        dead = f"127.0.0.1:{free_port()}"
        mw = ProxyBrokerMiddleware.from_crawler(
            get_crawler(settings_dict={"PROXYBROKER_ADDRESS": dead, "PROXYBROKER_SILENT_AFTER": 1.5})
        )
        self.addCleanup(mw.client.close, abandon=False)
        self.assertEqual(mw.client.silent_after, 1.5)
        with self.assertRaises(ValueError) as ctx:
            ProxyBrokerMiddleware.from_crawler(
                get_crawler(settings_dict={"PROXYBROKER_ADDRESS": dead, "PROXYBROKER_SILENT_AFTER": 4})
            )
        self.assertIn("silent_after", str(ctx.exception))


class SilentConnectionTest(unittest.TestCase):
    def setUp(self) -> None:
        self.relay = TcpRelay(broker.port)
        self.addCleanup(self.relay.close)
        self.other = BrokerClient(broker.address, worker_id="py-silent-other")
        self.addCleanup(self.other.close)

    def client(self, worker_id: str, **kwargs) -> BrokerClient:
        client = BrokerClient(self.relay.address, worker_id=worker_id, **kwargs)
        self.addCleanup(client.close, abandon=False)
        return client

    def hold_every_proxy(self, client: BrokerClient, domain: str):
        leases = [client.acquire(domain, ttl=30) for _ in range(SAMPLE_POOL_SIZE)]
        self.assertEqual(len({lease.proxy.id for lease in leases}), SAMPLE_POOL_SIZE)
        return leases

    def assert_yielded_within(self, leases, went_silent: float, silent_after: float) -> None:
        """Every lease given up once the silence lasted ``silent_after`` (not before: the last
        pong may be a ping period older than the silence), and not much later."""
        for lease in leases:
            self.assertTrue(lease.lost.wait(max(0.0, went_silent + silent_after + MARGIN - time.monotonic())),
                            f"not given up within {silent_after} s + {MARGIN} s of silence")
        took = time.monotonic() - went_silent
        self.assertGreaterEqual(took, silent_after * 2 / 3 - 0.1, "given up before the connection was silent")
        for lease in leases:
            self.assertTrue(lease.yielded)
            self.assertEqual(lease.lost_reason, "REVOKED")
            self.assertFalse(lease.held)

    def assert_acquire_fails_fast(self, client: BrokerClient) -> None:
        started = time.monotonic()
        with self.assertRaises(BrokerUnavailable) as ctx:
            client.acquire(fresh_domain(), ttl=5)  # request_timeout is 10 s: no waiting for it
        self.assertLess(time.monotonic() - started, 0.5)
        self.assertIn("unreachable", str(ctx.exception))

    def assert_every_proxy_free(self, domain: str) -> None:
        """The other client gets every proxy for ``domain``: nothing holds them on the broker."""
        leases = [self.other.acquire(domain, ttl=5) for _ in range(SAMPLE_POOL_SIZE)]
        self.assertEqual(len({lease.proxy.id for lease in leases}), SAMPLE_POOL_SIZE)
        for lease in leases:
            lease.release("SUCCESS")

    def test_a_silent_connection_yields_the_leases_and_fails_acquires_fast_until_it_heals(self) -> None:
        silent_after = 2.0
        client = self.client("py-silent", silent_after=silent_after)
        domain = fresh_domain()
        leases = self.hold_every_proxy(client, domain)
        time.sleep(1.0)  # a while of pings and pongs
        self.relay.go_silent()
        went_silent = time.monotonic()
        pending = client.acquire_async(fresh_domain(), ttl=30)  # sent; its answer cannot come
        self.assert_yielded_within(leases, went_silent, silent_after)
        self.assertEqual(client.held_leases(), [])
        # the acquire that waited failed with the silence, not at its deadline (10 s)
        with self.assertRaises(BrokerUnavailable):
            pending.result(timeout=0.5)
        self.assertLess(time.monotonic() - went_silent, silent_after + MARGIN)
        self.assert_acquire_fails_fast(client)
        # the requests sent through the leases finish: their outcomes wait for the broker ...
        for lease in leases[:-1]:
            self.assertFalse(lease.release("SUCCESS", http_status=200))
        self.assertEqual(client.outcomes_to_replay, SAMPLE_POOL_SIZE - 1)
        # ... which still holds every proxy for the domain (30 s leases)
        with self.assertRaises(NoProxyAvailable):
            self.other.acquire(domain, ttl=5)

        self.relay.heal()  # the connection that lost bytes is reset; a new one carries answers
        self.assertTrue(wait_until(lambda: _acquires(client), within=15), "the client did not hear the broker again")
        self.assertTrue(wait_until(lambda: client.outcomes_to_replay == 0, within=15),
                        f"{client.outcomes_to_replay} release(s) still owed")
        # one request finished after the broker was back and the owed releases went: its own
        # release goes out too, at once
        self.assertFalse(leases[-1].release("SUCCESS", http_status=200))
        self.assertTrue(wait_until(lambda: client.outcomes_to_replay == 0, within=5), "the last release stays owed")
        self.assert_every_proxy_free(domain)

    def test_answers_that_come_again_on_the_same_connection_end_the_silence(self) -> None:
        silent_after = 1.0
        client = self.client("py-silent-keep", silent_after=silent_after)
        domain = fresh_domain()
        leases = self.hold_every_proxy(client, domain)
        time.sleep(0.5)
        self.relay.go_silent(keep=True)  # a partition TCP rides out: the bytes come late
        went_silent = time.monotonic()
        self.assert_yielded_within(leases, went_silent, silent_after)
        self.assert_acquire_fails_fast(client)
        for lease in leases:
            self.assertFalse(lease.release("SUCCESS", http_status=200))
        self.relay.heal()
        # the pongs of the pings sent meanwhile arrive on the same stream: the silence ends, and
        # the releases owed go out
        self.assertTrue(wait_until(lambda: client.outcomes_to_replay == 0, within=10),
                        f"{client.outcomes_to_replay} release(s) still owed")
        self.assertEqual(client.streams_opened, 1, "the stream did not break")
        self.assert_every_proxy_free(domain)
        self.assertTrue(_acquires(client))

    def test_pongs_keep_an_idle_client_from_counting_as_silent(self) -> None:
        silent_after = 1.0
        client = self.client("py-silent-idle", silent_after=silent_after, heartbeat=False)
        lease = client.acquire(fresh_domain(), ttl=30)
        time.sleep(3 * silent_after)  # no acquire, renew or release: only pings and pongs
        self.assertFalse(lease.lost.is_set(), lease.lost_reason)
        self.assertFalse(lease.yielded)
        self.assertEqual(client.held_leases(), [lease])
        self.assertTrue(_acquires(client))
        self.assertTrue(lease.release("SUCCESS"))


class RevokedTest(unittest.TestCase):
    def test_an_unasked_revocation_marks_the_lease_lost(self) -> None:
        client = BrokerClient(broker.address, worker_id="py-revoked")
        self.addCleanup(client.close)
        domain = fresh_domain()
        lease = client.acquire(domain, ttl=30)  # heartbeats every 10 s: none before the revocation
        elsewhere = client.acquire(fresh_domain(), ttl=30)
        # A worker with a fallback pool claims the domain whole, is acknowledged, and falls
        # silent: about 1.5 s later the broker reserves the domain for it and takes back every
        # other worker's lease on it.
        heard = claim_then_fall_silent(broker.address, "py-silent-claimant", domain)
        self.assertTrue(lease.lost.wait(5), "the revocation did not reach the lease")
        self.assertLess(time.monotonic() - heard, 5)
        self.assertEqual(lease.lost_reason, "REVOKED")
        self.assertFalse(lease.yielded, "revoked by the broker, not given up for a silence")
        self.assertFalse(lease.held)
        self.assertEqual(client.held_leases(), [elsewhere])
        self.assertEqual(client.outcomes_to_replay, 0, "nothing owed: the broker released it")
        self.assertFalse(elsewhere.lost.is_set())
        self.assertTrue(elsewhere.release("SUCCESS"))


class MiddlewareTimeoutTest(unittest.TestCase):
    """Acquires of the Scrapy middleware that time out while the broker is cut off silently: each
    request fails once, and no Deferred is fired twice (Twisted's AlreadyCalledError)."""

    def test_timed_out_acquires_fire_their_deferreds_once(self) -> None:
        relay = TcpRelay(broker.port)
        self.addCleanup(relay.close)
        relay.go_silent()
        count = 8
        # timeout = max_wait + request_timeout = 1 s, before the 3 s silence bound fails them
        run = subprocess.run(
            [sys.executable, os.path.join(HERE, "middleware_acquires.py"), relay.address, str(count),
             "0.5", "0.5", "3.0", "2.5"],
            env=dict(os.environ, PYTHONPATH=PKG_ROOT), capture_output=True, text=True, timeout=60,
        )
        self.assertEqual(run.returncode, 0, run.stderr[-3000:])
        fired_twice = run.stderr.count("AlreadyCalledError")
        self.assertEqual(fired_twice, 0, f"{fired_twice} AlreadyCalledError line(s):\n" + run.stderr[-1500:])
        self.assertEqual(json.loads(run.stdout.strip().splitlines()[-1]), ["BrokerUnavailable"] * count,
                         run.stderr[-3000:])


def _acquires(client: BrokerClient) -> bool:
    """Whether ``client`` leases a proxy now (and gives it back)."""
    try:
        client.acquire(fresh_domain(), ttl=5, timeout=5).release("SUCCESS")
        return True
    except BrokerUnavailable:
        return False


def claim_then_fall_silent(address: str, worker_id: str, domain: str) -> float:
    """Act as a worker with a fallback pool (an SDK) that claims ``domain`` whole and falls
    silent: ping with the claim, echo the first pong's time in a second ping, then stop. Returns
    when (monotonic) the second pong came."""
    claim = pb.FallbackClaim(
        version=1,
        members=[worker_id],
        keys=[pb.ClaimedKey(domain=domain, share_key=domain, whole=True, until_time=wire.timestamp(time.time() + 120))],
    )
    requests: "queue.SimpleQueue" = queue.SimpleQueue()

    def sent() -> Iterator[pb.LeaseRequest]:
        while True:
            msg = requests.get()
            if msg is None:
                return
            yield msg

    def ping(heard_time=None) -> pb.LeaseRequest:
        msg = pb.Ping(worker_id=worker_id, pool="default", fallback_pool=True, claim=claim)
        if heard_time is not None:
            msg.heard_time.CopyFrom(heard_time)
        return pb.LeaseRequest(ping=msg)

    with grpc.insecure_channel(address) as channel:
        call = broker_pb2_grpc.ProxyBrokerStub(channel).Lease(sent(), timeout=10)
        answers: List[pb.LeaseResponse] = []
        requests.put(ping())
        answers.append(next(call))
        first = answers[0].pong
        if answers[0].WhichOneof("kind") != "pong" or first.claim_version != 1:
            raise AssertionError(f"the claim was not acknowledged: {answers[0]}")
        requests.put(ping(first.time))
        answers.append(next(call))
        heard = time.monotonic()
        requests.put(None)
        call.cancel()
    return heard


if __name__ == "__main__":
    unittest.main()
