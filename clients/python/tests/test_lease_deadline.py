"""Lease deadlines on the client's monotonic clock, counted from when the acquire (or the renew
that extended it) was sent: ``sent + ttl - margin``. Against a real broker process; an injected
clock stands in for time.monotonic, so nothing here depends on the wall clock or the broker's."""

from __future__ import annotations

import os
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from broker_process import BrokerProcess  # noqa: E402
from tcp_relay import TcpRelay  # noqa: E402

from proxybroker_client import BrokerClient, LeaseLost  # noqa: E402
from proxybroker_client.lease import deadline_margin  # noqa: E402

SAMPLE_POOL_SIZE = 5  # examples/proxies.txt
START = 1000.0  # the injected clock's start: nothing to do with any wall clock

broker: BrokerProcess


def setUpModule() -> None:
    global broker
    broker = BrokerProcess().start()


def tearDownModule() -> None:
    broker.stop()


def fresh_domain() -> str:
    return f"d{uuid.uuid4().hex[:10]}.example.com"


class FakeClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self, start: float = START) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class InjectedClockTest(unittest.TestCase):
    def setUp(self) -> None:
        self.clock = FakeClock()
        self.client = BrokerClient(broker.address, worker_id="py-deadline", clock=self.clock, heartbeat=False)
        self.addCleanup(self.client.close)
        self.other = BrokerClient(broker.address, worker_id="py-deadline-other")
        self.addCleanup(self.other.close)

    def test_margin(self) -> None:
        self.assertEqual(deadline_margin(10.0), 1.0)  # 10 % of the TTL
        self.assertEqual(deadline_margin(1.0), 0.2)  # at least 200 ms
        self.assertEqual(deadline_margin(0.4), 0.1)  # at most a quarter of the TTL
        self.assertEqual(deadline_margin(10.0, minimum=2.0), 2.0)

    def test_the_deadline_counts_from_the_send_time_and_the_lease_is_lost_there(self) -> None:
        lease = self.client.acquire(fresh_domain(), ttl=10)
        self.assertEqual(lease.deadline, START + 10 - 1.0)
        self.assertGreater(lease.expire_time, 1e9, "the broker's expiry is on its own clock: not used")
        self.clock.advance(8.999)
        self.assertTrue(lease.held)
        self.assertFalse(lease.lost.is_set())
        self.assertIn(lease, self.client.held_leases())
        self.clock.advance(0.001)  # the deadline: the broker still holds it, the client gives it up
        self.assertTrue(lease.lost.is_set())
        self.assertEqual(lease.lost_reason, "EXPIRED")
        self.assertFalse(lease.held)
        self.assertNotIn(lease, self.client.held_leases())
        with self.assertRaises(LeaseLost):
            lease.renew()  # not asked of the broker any more

    def test_a_confirmed_renewal_moves_the_deadline_from_the_renews_send_time(self) -> None:
        lease = self.client.acquire(fresh_domain(), ttl=10)
        self.clock.advance(4)
        lease.renew()
        self.assertEqual(lease.deadline, START + 4 + 10 - 1.0)
        self.clock.advance(8.999)  # past the first deadline, before the new one
        self.assertTrue(lease.held)
        self.clock.advance(0.001)
        self.assertTrue(lease.lost.is_set())
        self.assertTrue(lease.release("SUCCESS"), "the broker still held it: the outcome is reported")

    def test_time_spent_waiting_in_the_broker_counts_against_the_ttl(self) -> None:
        domain = fresh_domain()
        held = [self.other.acquire(domain, ttl=10) for _ in range(SAMPLE_POOL_SIZE)]
        fut = self.client.acquire_async(domain, ttl=10, max_wait=5)  # sent at START
        time.sleep(0.1)
        self.clock.advance(3)  # the acquire waits inside the broker
        held[0].release("SUCCESS")
        lease = fut.result(timeout=5)
        self.assertEqual(lease.deadline, START + 10 - 1.0, "counted from the send time, not the arrival")
        self.assertTrue(lease.held)
        for held_lease in held[1:] + [lease]:
            held_lease.release("SUCCESS")

    def test_a_grant_that_waited_most_of_its_ttl_is_confirmed_before_it_is_handed_over(self) -> None:
        domain = fresh_domain()
        held = [self.other.acquire(domain, ttl=10) for _ in range(SAMPLE_POOL_SIZE)]
        fut = self.client.acquire_async(domain, ttl=10, max_wait=5)
        time.sleep(0.1)
        self.clock.advance(12)  # its deadline (START + 9) passed while it waited
        held[0].release("SUCCESS")
        lease = fut.result(timeout=5)
        # Not handed over dead: a renew sent on arrival confirmed it, and the deadline counts from it.
        self.assertTrue(lease.held)
        self.assertEqual(lease.deadline, START + 12 + 10 - 1.0)
        for held_lease in held[1:] + [lease]:
            held_lease.release("SUCCESS")


class RealClockTest(unittest.TestCase):
    def test_without_heartbeats_lost_is_set_at_the_deadline_before_the_ttl(self) -> None:
        client = BrokerClient(broker.address, worker_id="py-deadline-real")
        self.addCleanup(client.close)
        sent = time.monotonic()
        lease = client.acquire(fresh_domain(), ttl=0.4, heartbeat=False)
        # Nobody calls anything: the client's timer sets `lost` at sent + 0.4 - 0.1.
        self.assertTrue(lease.lost.wait(2), "lost was never set")
        lost_after = time.monotonic() - sent
        self.assertEqual(lease.lost_reason, "EXPIRED")
        self.assertGreaterEqual(lost_after, 0.3 - 0.01)
        self.assertLess(lost_after, 0.4, "given up before the broker's TTL could run out")

    def test_unanswered_renewals_lose_the_lease_at_its_deadline(self) -> None:
        relay = TcpRelay(broker.port)
        self.addCleanup(relay.close)
        client = BrokerClient(relay.address, worker_id="py-deadline-relay")
        self.addCleanup(client.close, abandon=False)
        lease = client.acquire(fresh_domain(), ttl=0.8)  # heartbeats every 0.27 s
        time.sleep(0.5)
        self.assertTrue(lease.held)
        relay.hold_replies()  # the broker still gets the renews, the client hears nothing
        silent_from = time.monotonic()
        self.assertTrue(lease.lost.wait(3), "lost was never set")
        self.assertEqual(lease.lost_reason, "EXPIRED")
        # The last confirmed renew was sent before the silence: deadline = its send + 0.8 - 0.2.
        self.assertLess(time.monotonic() - silent_from, 0.6 + 0.1)


if __name__ == "__main__":
    unittest.main()
