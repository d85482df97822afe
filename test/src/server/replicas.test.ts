import { afterEach, describe, expect, it } from "vitest";
import { DenyReason } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import { releaseSubscribers, startBroker, uniquePrefix, waitingAcquires } from "../../support/broker.js";
import type { TestBroker } from "../../support/broker.js";
import type { BrokerServerSettings } from "../../../src/server/broker-server.js";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { withRedis } from "../../support/with-redis.js";
import { StreamClient, granted } from "../../support/stream-client.js";

/** Two broker replicas on one Redis (one key prefix), over real gRPC. */
describe("replicas", () => {
  const redis = withRedis();
  const brokers: TestBroker[] = [];
  const streams: StreamClient[] = [];
  const clients: ProxyBrokerClient[] = [];

  const replicas = async (proxies: number, settings: Partial<BrokerServerSettings> = {}): Promise<[TestBroker, TestBroker]> => {
    const prefix = uniquePrefix();
    const a = await startBroker({ kind: "redis", redisUrl: redis.url(), prefix, settings });
    const b = await startBroker({ kind: "redis", redisUrl: redis.url(), prefix, settings });
    brokers.push(a, b);
    await a.admin.addProxies({ proxies: Array.from({ length: proxies }, (_, i) => ({ url: `10.6.0.${i + 1}:8080` })) });
    return [a, b];
  };
  const open = (b: TestBroker) => {
    const s = new StreamClient(b.broker);
    streams.push(s);
    return s;
  };

  afterEach(async () => {
    for (const s of streams.splice(0)) s.cancel();
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(brokers.splice(0).map((b) => b.stop()));
  });

  it("a release through one replica grants a waiter on the other within milliseconds (announced by Redis, not found by the poll)", async () => {
    // a poll of 10 s: only the release announcement can wake the waiter in time
    const [a, b] = await replicas(1, { waitPollMs: 10_000 });
    const holder = open(a);
    const lease = granted(await holder.acquire({ domain: "wake.example", workerId: "w1" }));
    const waiting = open(b).acquire({ domain: "wake.example", workerId: "w2", maxWaitMs: 5_000 });
    // before each release, the waiter waits on its replica, and that replica (then both) hears the
    // key's releases: on a loaded machine a set time was not always enough for either
    const queued = async (x: TestBroker, subscribed: number): Promise<void> => {
      await expect.poll(() => waitingAcquires(x.server), { timeout: 15_000, interval: 20 }).toBe(1);
      await expect.poll(() => releaseSubscribers(redis.admin(), "wake.example"), { timeout: 15_000, interval: 20 }).toBe(subscribed);
    };
    await queued(b, 1);
    const latencies: number[] = [];
    let current = lease;
    let pending = waiting;
    for (let i = 0; i < 5; i++) {
      const sentAt = Date.now();
      await holder.release(current.leaseId, current.fencingToken, OutcomeKind.SUCCESS);
      const got = granted(await pending);
      latencies.push(Date.now() - sentAt);
      // and back: B holds it, A waits
      const backWaiter = holder.acquire({ domain: "wake.example", workerId: "w1", maxWaitMs: 5_000 });
      await queued(a, 2);
      const bStream = open(b);
      const t = Date.now();
      await bStream.release(got.leaseId, got.fencingToken, OutcomeKind.SUCCESS);
      current = granted(await backWaiter);
      latencies.push(Date.now() - t);
      pending = open(b).acquire({ domain: "wake.example", workerId: "w2", maxWaitMs: 5_000 });
      await queued(b, 2);
    }
    console.log(`cross-replica wake-up: release → grant on the other replica ${latencies.join(", ")} ms`);
    // announced, not polled: the grants themselves say so (the 10 s poll comes after max_wait);
    // this bound, well under both, that no wake-up waited for either on a loaded machine
    expect(Math.max(...latencies)).toBeLessThan(3_000);
    await holder.release(current.leaseId, current.fencingToken, OutcomeKind.SUCCESS);
    granted(await pending);
  });

  it("an acquire re-sent through the other replica gets the same lease; a denial is decided anew", async () => {
    const [a, b] = await replicas(1);
    const first = granted(await open(a).acquire({ domain: "shop.example", workerId: "w1", requestId: "req-1" }));
    // the answer was lost with the stream: the worker re-sends the same request elsewhere
    const again = granted(await open(b).acquire({ domain: "shop.example", workerId: "w1", requestId: "req-1" }));
    expect(again.leaseId).toBe(first.leaseId);
    expect(again.fencingToken).toBe(first.fencingToken);
    // another worker's request with that id is its own request: denied (the one proxy is held)
    expect((await open(b).acquire({ domain: "shop.example", workerId: "w2", requestId: "req-1" })).case).toBe("denied");
    // a denied request, retried after the proxy came free, is granted
    const denied = await open(a).acquire({ domain: "shop.example", workerId: "w3", requestId: "req-9" });
    expect(denied.case).toBe("denied");
    expect((await open(b).release(first.leaseId, first.fencingToken)).case).toBe("released");
    expect((await open(b).acquire({ domain: "shop.example", workerId: "w3", requestId: "req-9" })).case).toBe("granted");
  });

  it("rejects an acquire without request_id on the stream, and keeps the stream open", async () => {
    const [a] = await replicas(1);
    const s = open(a);
    const r = await s.acquire({ domain: "shop.example", requestId: "" });
    expect(r.case === "denied" && r.value.reason).toBe(DenyReason.INVALID_ARGUMENT);
    expect(r.case === "denied" && r.value.message).toMatch(/request_id/);
    expect((await s.acquire({ domain: "shop.example" })).case).toBe("granted");
  });

  it("drains one replica under load: SDK clients on both addresses see no failed call and no lost lease", async () => {
    const [a, b] = await replicas(8);
    const target = `ipv4:${a.address},${b.address}`;
    const failures: unknown[] = [];
    const lost: string[] = [];
    let done = 0;
    let stop = false;
    const worker = async (i: number) => {
      const c = new ProxyBrokerClient({
        address: target,
        workerId: `drain-${i}`,
        fallback: { enabled: false },
        breaker: { callTimeoutMs: 2_000 },
      });
      clients.push(c);
      while (!stop) {
        try {
          await c.withLease(
            `https://site${i % 3}.example/`,
            async (lease) => {
              lease.signal.addEventListener("abort", () => lost.push(lease.id));
              await new Promise((r) => setTimeout(r, 5));
            },
            { maxWaitMs: 2_000, ttlMs: 2_000 },
          );
          done++;
        } catch (err) {
          failures.push(err);
        }
      }
    };
    const loops = [0, 1, 2, 3].map(worker);
    const grantsOf = async (x: TestBroker) => (await x.server.metrics.grants.get()).values.reduce((n, v) => n + v.value, 0);
    // under load, not after a set time: the first address served, and leases were done
    await expect.poll(() => grantsOf(a), { timeout: 15_000, interval: 20 }).toBeGreaterThan(0);
    await expect.poll(() => done, { timeout: 15_000, interval: 20 }).toBeGreaterThan(0);
    const before = done;
    await a.server.shutdown(2_000); // SIGTERM's drain: the clients move to b
    const bBefore = await grantsOf(b);
    // the clients go on through b: more grants there, more leases done, whatever the machine's speed
    await expect.poll(() => grantsOf(b), { timeout: 15_000, interval: 20 }).toBeGreaterThan(bBefore + 4);
    await expect.poll(() => done, { timeout: 15_000, interval: 20 }).toBeGreaterThan(before + 4);
    stop = true;
    await Promise.all(loops);
    expect(failures.map(String)).toEqual([]);
    expect(lost).toEqual([]);
  });
});
