"""BrokerClient against a real broker process (embedded store, sample pool of 5 proxies)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from broker_process import BrokerProcess, free_port  # noqa: E402

from proxybroker_client import BrokerClient, LeaseLost, NoProxyAvailable  # noqa: E402
from proxybroker_client.gen.proxybroker.v1 import admin_pb2 as admin_pb  # noqa: E402
from proxybroker_client.gen.proxybroker.v1 import broker_pb2 as pb  # noqa: E402

SAMPLE_POOL_SIZE = 5  # examples/proxies.txt

broker: BrokerProcess


def setUpModule() -> None:
    global broker
    broker = BrokerProcess().start()


def tearDownModule() -> None:
    broker.stop()


def fresh_domain() -> str:
    """A domain no other test used: every test starts with the whole pool free for it."""
    return f"t{uuid.uuid4().hex[:10]}.example.com"


class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = BrokerClient(broker.address, worker_id="py-test")
        self.addCleanup(self.client.close)

    def test_acquire_and_release(self) -> None:
        domain = fresh_domain()
        lease = self.client.acquire(f"https://{domain}/p/1", ttl=5)
        self.assertTrue(lease.held)
        self.assertEqual(lease.domain, domain)
        self.assertEqual(lease.pool, "default")
        self.assertGreaterEqual(len(lease.lease_id), 16)
        self.assertTrue(lease.proxy_url.startswith(("http://", "socks5://")), lease.proxy_url)
        self.assertGreater(lease.expire_time, time.time())
        self.assertIn(lease, self.client.held_leases())
        self.assertTrue(lease.release("SUCCESS", http_status=200, latency=0.12))
        self.assertFalse(lease.held)
        self.assertNotIn(lease, self.client.held_leases())
        self.assertFalse(lease.release("SUCCESS"), "a second release is a no-op")

    def test_denied_with_retry_after_when_the_pool_is_busy_for_the_domain(self) -> None:
        domain = fresh_domain()
        leases = [self.client.acquire(domain, ttl=5) for _ in range(SAMPLE_POOL_SIZE)]
        self.assertEqual(len({held_lease.proxy.id for held_lease in leases}), SAMPLE_POOL_SIZE, "exclusive per domain")
        with self.assertRaises(NoProxyAvailable) as ctx:
            self.client.acquire(domain, ttl=5)
        self.assertIsNotNone(ctx.exception.retry_after)
        self.assertGreater(ctx.exception.retry_after, 0)
        self.assertLessEqual(ctx.exception.retry_after, 5)
        # Other domains are unaffected, and a release frees its proxy for this one.
        self.client.acquire(fresh_domain(), ttl=5).release("ABANDONED")
        leases[0].release("SUCCESS")
        again = self.client.acquire(domain, ttl=5)
        self.assertEqual(again.proxy.id, leases[0].proxy.id)
        for held_lease in leases[1:] + [again]:
            held_lease.release("SUCCESS")

    def test_max_wait_is_granted_when_a_proxy_is_released(self) -> None:
        domain = fresh_domain()
        leases = [self.client.acquire(domain, ttl=5) for _ in range(SAMPLE_POOL_SIZE)]
        fut = self.client.acquire_async(domain, ttl=5, max_wait=5)
        time.sleep(0.2)
        self.assertFalse(fut.done())
        leases[2].release("SUCCESS")
        waited = fut.result(timeout=5)
        self.assertEqual(waited.proxy.id, leases[2].proxy.id)
        for held_lease in leases[:2] + leases[3:] + [waited]:
            held_lease.release("SUCCESS")

    def test_heartbeats_keep_a_lease_alive_past_its_ttl(self) -> None:
        domain = fresh_domain()
        lease = self.client.acquire(domain, ttl=0.3)
        time.sleep(1.2)  # 4 TTLs
        self.assertTrue(lease.held)
        self.assertFalse(lease.lost.is_set())
        self.assertGreater(lease.renew(), time.time())  # the broker still holds it for us
        self.assertTrue(lease.release("SUCCESS"))

    def test_without_heartbeats_the_lease_expires_and_is_lost(self) -> None:
        lease = self.client.acquire(fresh_domain(), ttl=0.2, heartbeat=False)
        time.sleep(0.5)
        with self.assertRaises(LeaseLost) as ctx:
            lease.renew()
        self.assertEqual(ctx.exception.lost_reason, lease.lost_reason)
        self.assertIn(lease.lost_reason, ("EXPIRED", "NOT_FOUND"))
        self.assertTrue(lease.lost.is_set())
        self.assertFalse(lease.held)

    def test_a_heartbeat_on_a_lease_released_elsewhere_sets_lost(self) -> None:
        lease = self.client.acquire(fresh_domain(), ttl=0.3)
        # Someone else (here: a unary call) releases it behind the client's back.
        self.client.stub.ReleaseLease(
            pb.ReleaseLeaseRequest(
                lease_id=lease.lease_id,
                fencing_token=lease.fencing_token,
                outcome=pb.Outcome(kind=pb.OUTCOME_KIND_SUCCESS),
            ),
            timeout=5,
        )
        self.assertTrue(lease.lost.wait(2), "the next heartbeat learns that the lease is gone")
        self.assertEqual(lease.lost_reason, "NOT_FOUND")
        self.assertNotIn(lease, self.client.held_leases())

    def test_sticky_session_gets_the_same_proxy(self) -> None:
        domain = fresh_domain()
        first = self.client.acquire(domain, ttl=5, session_key="cart-1")
        first.release("SUCCESS")
        second = self.client.acquire(domain, ttl=5, session_key="cart-1")
        self.assertEqual(second.proxy.id, first.proxy.id)
        self.assertFalse(second.session_rebound)
        second.release("SUCCESS")

    def test_labels_and_tier_select_proxies(self) -> None:
        lease = self.client.acquire(fresh_domain(), ttl=5, tier="datacenter", labels={"country": "us"})
        self.assertEqual(lease.proxy.id, "127.0.0.1:3130")
        lease.release("SUCCESS")

    def test_invalid_ttl_is_a_broker_error(self) -> None:
        from proxybroker_client import BrokerError

        with self.assertRaises(BrokerError) as ctx:
            self.client.acquire(fresh_domain(), ttl=7200)
        self.assertEqual(ctx.exception.reason, "INVALID_ARGUMENT")
        self.assertNotIsInstance(ctx.exception, NoProxyAvailable)

    def test_context_manager_releases(self) -> None:
        domain = fresh_domain()
        with self.client.acquire(domain, ttl=5) as lease:
            pass
        self.assertTrue(lease.released)

    def test_close_releases_held_leases_as_abandoned(self) -> None:
        domain = fresh_domain()
        other = BrokerClient(broker.address, worker_id="py-test-close")
        leases = [other.acquire(domain, ttl=30) for _ in range(SAMPLE_POOL_SIZE)]
        other.close()
        self.assertTrue(all(held_lease.released for held_lease in leases))
        self.client.acquire(domain, ttl=5).release("SUCCESS")  # the pool is free again

    def test_close_leaves_the_pool(self) -> None:
        other = BrokerClient(broker.address, worker_id="py-test-leaves")
        other.acquire(fresh_domain(), ttl=5).release("SUCCESS")

        def live() -> list:
            request = pb.GetPoolSnapshotRequest(pool="default", workers_only=True)
            snap = self.client.stub.GetPoolSnapshot(request, timeout=5)
            return [w.worker_id for w in snap.live_workers]

        self.assertIn("py-test-leaves", live())
        other.close()
        self.assertNotIn("py-test-leaves", live(), "a closed client is no longer a live worker")

    def test_worker_id_defaults_to_env(self) -> None:
        old = os.environ.get("WORKER_ID")
        os.environ["WORKER_ID"] = "from-env"
        try:
            c = BrokerClient(broker.address)
            self.assertEqual(c.worker_id, "from-env")
            c.close()
        finally:
            if old is None:
                del os.environ["WORKER_ID"]
            else:
                os.environ["WORKER_ID"] = old

    def test_unreachable_broker_is_unavailable_not_a_hang(self) -> None:
        from proxybroker_client import BrokerUnavailable

        dead = BrokerClient(f"127.0.0.1:{free_port()}", worker_id="py-test-dead", request_timeout=0.5)
        started = time.monotonic()
        with self.assertRaises(BrokerUnavailable):
            dead.acquire(fresh_domain())
        dead.close()
        self.assertLess(time.monotonic() - started, 5)


class StreamBreakTest(unittest.TestCase):
    """Kill the broker (SIGKILL) and start it again on the same port over the same Redis: the
    client reopens its stream, and the lease, renewed there, is still held."""

    def setUp(self) -> None:
        # Runs on Redis: the embedded store forgets every lease when the broker is killed.
        if shutil.which("redis-server") is None:
            self.fail("redis-server is not on PATH (Debian: apt-get install redis-server)")
        self.dir = tempfile.mkdtemp(prefix="pb-redis-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        port = free_port()
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.addCleanup(self._stop_redis)
        url = f"redis://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while subprocess.run(["redis-cli", "-u", url, "ping"], capture_output=True, text=True).stdout.strip() != "PONG":
            if time.monotonic() > deadline:
                self.fail("redis-server did not start")
            time.sleep(0.05)
        repo_pool = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "proxies.txt")
        self.broker = BrokerProcess(REDIS_URL=url, PROXIES_FILE=os.path.abspath(repo_pool),
                                    REDIS_KEY_PREFIX="pbpy").start()
        self.addCleanup(self.broker.stop)

    def _stop_redis(self) -> None:
        self.redis.send_signal(signal.SIGKILL)
        self.redis.wait()

    def test_lease_survives_a_broker_restart(self) -> None:
        # (without yield_leases: by default a lease is given up when the broker is gone)
        client = BrokerClient(self.broker.address, worker_id="py-test-break", yield_leases=False)
        self.addCleanup(client.close)
        ttl = 5.0  # heartbeats every 1.7 s; a broker restart takes 1-2 s
        acquired = time.monotonic()
        lease = client.acquire(fresh_domain(), ttl=ttl)
        self.assertEqual(client.streams_opened, 1)
        self.broker.stop(signal.SIGKILL)
        time.sleep(0.3)
        queued = client.acquire_async(fresh_domain(), ttl=5)  # sent while no broker listens
        self.broker.start()
        self.assertTrue(queued.result(timeout=10).release("SUCCESS"), "sent again on the new stream")
        # Past the first TTL: the lease is alive only if a heartbeat renewed it on the new stream.
        time.sleep(max(0.0, acquired + ttl + 1.0 - time.monotonic()))
        self.assertGreaterEqual(client.streams_opened, 2)
        self.assertFalse(lease.lost.is_set(), lease.lost_reason)
        self.assertGreater(lease.renew(), time.time())
        self.assertTrue(lease.release("SUCCESS"))

    def test_gives_up_its_leases_when_the_broker_is_gone_and_releases_them_when_it_is_back(self) -> None:
        client = BrokerClient(self.broker.address, worker_id="py-test-yield")
        self.addCleanup(client.close)
        domain = fresh_domain()
        lease = client.acquire(domain, ttl=30)
        listed = admin_pb.ListProxiesRequest(page_size=100)
        before = {p.id: p.success_count for p in client.admin.ListProxies(listed).proxies}
        self.broker.stop(signal.SIGKILL)
        killed = time.monotonic()
        # given up within about GONE_AFTER, not at the lease's deadline (30 s)
        self.assertTrue(lease.lost.wait(5), "not given up")
        self.assertLess(time.monotonic() - killed, 2.0)
        self.assertTrue(lease.yielded)
        self.assertEqual(lease.lost_reason, "REVOKED")
        # the request sent through it finished: its outcome waits for the broker
        self.assertFalse(lease.release("SUCCESS", http_status=200))
        self.assertEqual(client.outcomes_to_replay, 1)
        self.broker.start()
        deadline = time.monotonic() + 15
        while client.outcomes_to_replay > 0:
            self.assertLess(time.monotonic(), deadline, "not replayed")
            time.sleep(0.05)
        after = {p.id: p.success_count for p in client.admin.ListProxies(listed).proxies}
        self.assertEqual(after[lease.proxy.id], before[lease.proxy.id] + 1)
        # released there: the pair is free again, not closed for the rest of its 30 s TTL
        again = client.stub.AcquireLease(
            pb.AcquireLeaseRequest(pool="default", worker_id="py-test-other", domain=domain, proxy_id=lease.proxy.id)
        )
        self.assertEqual(again.lease.proxy.id, lease.proxy.id)
        # and the broker lists it as a worker that yields its leases
        snap = client.stub.GetPoolSnapshot(pb.GetPoolSnapshotRequest(pool="default"))
        me = [w for w in snap.live_workers if w.worker_id == "py-test-yield"]
        self.assertTrue(me and me[0].yields_leases and not me[0].fallback_pool, snap.live_workers)


if __name__ == "__main__":
    unittest.main()
