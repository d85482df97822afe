"""An acquire its caller gave up (timeout, cancellation, interruption, a stream that broke) whose
grant still comes is released as ABANDONED at once and never renewed. Against a real broker
process (embedded store, sample pool of 5 proxies); a TCP relay breaks the network on purpose."""

from __future__ import annotations

import os
import signal
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from broker_process import BrokerProcess  # noqa: E402
from tcp_relay import TcpRelay  # noqa: E402

from proxybroker_client import BrokerClient, BrokerUnavailable, NoProxyAvailable  # noqa: E402

SAMPLE_POOL_SIZE = 5  # examples/proxies.txt

broker: BrokerProcess


def setUpModule() -> None:
    global broker
    broker = BrokerProcess().start()


def tearDownModule() -> None:
    broker.stop()


def fresh_domain() -> str:
    return f"a{uuid.uuid4().hex[:10]}.example.com"


def acquire_soon(client: BrokerClient, domain: str, within: float):
    """A lease for ``domain`` as soon as one is free, asking every 50 ms (never waiting in the broker)."""
    give_up = time.monotonic() + within
    while True:
        try:
            return client.acquire(domain, ttl=10)
        except NoProxyAvailable:
            if time.monotonic() > give_up:
                raise
            time.sleep(0.05)


class _Interrupted(Exception):
    """Raised by a signal handler in the thread that waits for an acquire."""


class AbandonedAcquireTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = BrokerClient(broker.address, worker_id="py-abandon")
        self.addCleanup(self.client.close)
        self.other = BrokerClient(broker.address, worker_id="py-abandon-other")
        self.addCleanup(self.other.close)

    def hold_all(self, domain: str):
        """Every proxy of the pool, leased by the other client for ``domain``."""
        return [self.other.acquire(domain, ttl=10) for _ in range(SAMPLE_POOL_SIZE)]

    def assert_given_back(self, domain: str, freed) -> None:
        """The grant the client gave up went back to the pool: the other client gets the proxy
        (a lease the client kept, heartbeats and all, would hold it for its whole TTL)."""
        again = self.other.acquire(domain, ttl=5, max_wait=3)
        self.assertEqual(again.proxy.id, freed.proxy.id)
        self.assertEqual(self.client.held_leases(), [])
        again.release("SUCCESS")

    def test_a_grant_after_the_timeout_is_released(self) -> None:
        domain = fresh_domain()
        held = self.hold_all(domain)
        with self.assertRaises(BrokerUnavailable):
            self.client.acquire(domain, ttl=10, max_wait=5, timeout=0.3)  # still waiting in the broker
        held[0].release("SUCCESS")  # now the broker grants it
        self.assert_given_back(domain, held[0])
        for held_lease in held[1:]:
            held_lease.release("SUCCESS")

    def test_a_grant_after_the_future_was_cancelled_is_released(self) -> None:
        domain = fresh_domain()
        held = self.hold_all(domain)
        fut = self.client.acquire_async(domain, ttl=10, max_wait=5)
        time.sleep(0.2)
        self.assertTrue(fut.cancel())
        held[0].release("SUCCESS")
        self.assert_given_back(domain, held[0])
        for held_lease in held[1:]:
            held_lease.release("SUCCESS")

    def test_an_acquire_interrupted_while_waiting_releases_its_late_grant(self) -> None:
        domain = fresh_domain()
        held = self.hold_all(domain)

        def interrupt(signum, frame):
            raise _Interrupted()

        previous = signal.signal(signal.SIGALRM, interrupt)
        self.addCleanup(signal.signal, signal.SIGALRM, previous)
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with self.assertRaises(_Interrupted):
            self.client.acquire(domain, ttl=10, max_wait=5)  # waits in the broker; interrupted
        held[0].release("SUCCESS")  # the broker grants the acquire the caller left
        self.assert_given_back(domain, held[0])
        for held_lease in held[1:]:
            held_lease.release("SUCCESS")

    def test_the_grant_of_the_first_try_lost_with_the_stream_is_released(self) -> None:
        relay = TcpRelay(broker.port)
        self.addCleanup(relay.close)
        client = BrokerClient(relay.address, worker_id="py-abandon-relay")
        self.addCleanup(client.close)
        client.acquire(fresh_domain(), ttl=5).release("SUCCESS")  # the stream is up
        domain = fresh_domain()
        relay.hold_replies()
        with self.assertRaises(BrokerUnavailable):
            client.acquire(domain, ttl=30, timeout=0.5)  # granted by the broker; the grant never arrives
        # The broker holds that lease: one proxy of the pool is gone for the domain.
        held = [self.other.acquire(domain, ttl=10) for _ in range(SAMPLE_POOL_SIZE - 1)]
        with self.assertRaises(NoProxyAvailable):
            self.other.acquire(domain, ttl=10)
        relay.resume()
        relay.cut()  # the stream breaks; the client reconnects through the relay
        # Sent again under its request id, the acquire gets the first try's lease, which the
        # client releases at once. (Polled without waiting in the broker: while an acquire waits
        # there for the domain, the broker denies the retry before it looks up its request id.)
        last = acquire_soon(self.other, domain, within=5)
        self.assertNotIn(last.proxy.id, {held_lease.proxy.id for held_lease in held})
        self.assertEqual(client.held_leases(), [])
        self.assertGreaterEqual(client.streams_opened, 2)
        for held_lease in held + [last]:
            held_lease.release("SUCCESS")


if __name__ == "__main__":
    unittest.main()
