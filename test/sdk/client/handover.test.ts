import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOptions, Lease } from "@proxybroker/sdk";
import { fallbackReadyFor } from "../../support/fallback-ready.js";
import { brokerProcess } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { startRedisServer } from "../../support/redis-server.js";
import type { RedisServer } from "../../support/redis-server.js";
import { StreamClient, granted } from "../../support/stream-client.js";
import { startTcpRelay } from "../../support/tcp-relay.js";
import { LIFT_AFTER_MS } from "../../../src/lease/reservations.js";
import type { TcpRelay } from "../../support/tcp-relay.js";

const PROXIES = Array.from({ length: 8 }, (_, i) => `10.5.0.${i + 1}:3128`);
const DOMAIN = "strict.example";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** When one client's broker lease of a proxy ended, and when another client's fallback got it. */
interface Handoff {
  readonly proxy: string;
  readonly abortedAt: number | undefined;
  readonly grantedAt: number;
}

/**
 * The overlap window: how long a fallback lease ran beside a broker lease of the same (proxy,
 * domain) at another worker; ≤ 0 means none (the broker lease ended first, by that much).
 */
function overlapMs(handoffs: readonly Handoff[]): number {
  return Math.max(...handoffs.map((h) => (h.abortedAt ?? Number.POSITIVE_INFINITY) - h.grantedAt));
}

/**
 * Fallback never overlaps another worker's broker leases (docs/spec.md §7): measured with a
 * broker process on a real redis-server, real gRPC, a broker SIGKILLed, and a network cut that
 * drops bytes without resetting anything.
 */
describe("fallback and broker leases of other workers", () => {
  let redis: RedisServer;
  let broker: BrokerProcess;
  let dir: string;
  const clients: ProxyBrokerClient[] = [];
  const relays: TcpRelay[] = [];

  const client = (address: string, workerId: string, extra: Partial<ClientOptions> = {}) => {
    const c = new ProxyBrokerClient({
      address,
      workerId,
      breaker: { callTimeoutMs: 500, resetTimeoutMs: 300, volumeThreshold: 1 },
      fallback: { snapshotRefreshMs: 200, membershipRefreshMs: 200, silentAfterMs: 1_000 },
      ...extra,
    });
    clients.push(c);
    return c;
  };
  /** Lease every proxy for DOMAIN, recording when each lease is aborted. */
  const holdAll = async (c: ProxyBrokerClient, ttlMs: number) => {
    const aborted = new Map<string, number>();
    const held: Lease[] = [];
    for (let i = 0; i < PROXIES.length; i++) {
      const l = await c.acquire(`https://${DOMAIN}/held`, { ttlMs });
      l.signal.addEventListener("abort", () => aborted.set(l.proxy.id, Date.now()));
      held.push(l);
    }
    return { held, aborted };
  };
  /** Fallback grants of DOMAIN until `c` has its whole share. */
  const grabShare = async (c: ProxyBrokerClient, untilMs: number) => {
    const got: { proxy: string; at: number; lease: Lease }[] = [];
    while (Date.now() < untilMs && got.length < Math.max(1, c.fallback.share.length)) {
      try {
        const l = await c.acquire(`https://${DOMAIN}/fallback`, { maxWaitMs: 200 });
        got.push({ proxy: l.proxy.id, at: Date.now(), lease: l });
        expect(l.source).toBe("fallback");
      } catch {
        // not yet: the broker is unreachable and fallback not allowed yet
      }
    }
    return got;
  };

  beforeAll(async () => {
    redis = await startRedisServer();
    dir = await mkdtemp(join(tmpdir(), "pb-handover-"));
    await writeFile(join(dir, "proxies.txt"), PROXIES.join("\n"));
  });
  afterAll(async () => {
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(relays.splice(0).map((r) => r.close()));
    await broker.kill();
  });

  const startBroker = async (env: Record<string, string>) => {
    broker = await brokerProcess({
      redisUrl: redis.url,
      env: { PROXIES_FILE: join(dir, "proxies.txt"), REDIS_KEY_PREFIX: `ho${Date.now()}`, ...env },
    });
    await broker.start();
  };

  it("broker killed: an idle worker gives up its leases outside its share before another worker's fallback takes them", async () => {
    await startBroker({});
    const holder = client(broker.address, "holder");
    const taker = client(broker.address, "taker");
    const { held, aborted } = await holdAll(holder, 5_000); // heartbeats only from here on
    // both are listed with the site (the taker asked for it, and was denied): each uses its share
    await fallbackReadyFor(holder, [`https://${DOMAIN}/`]);
    await fallbackReadyFor(taker, [`https://${DOMAIN}/`]);
    await expect.poll(() => holder.fallbackUsable && taker.fallbackUsable, { timeout: 5_000 }).toBe(true);
    expect(holder.fallback.snapshot?.liveWorkers).toEqual(expect.arrayContaining(["holder", "taker"]));
    const takerShare = [...taker.fallback.share];
    expect(takerShare.length).toBeGreaterThan(0);
    await broker.kill();
    const got = await grabShare(taker, Date.now() + 3_000);
    expect(got.map((g) => g.proxy).sort()).toEqual([...takerShare].sort());
    const window = overlapMs(got.map((g) => ({ proxy: g.proxy, abortedAt: aborted.get(g.proxy), grantedAt: g.at })));
    expect(window).toBeLessThanOrEqual(0);
    // the holder keeps the leases of its own share (held locally), and gives up only the others
    for (const l of held) expect(l.signal.aborted).toBe(takerShare.includes(l.proxy.id));
    console.info(`crash: taker's first fallback lease ${-window} ms after the holder gave the pair up`);
  });

  it("broker killed with a worker without fallback pool in the fleet: nothing is granted until its leases may have run out", async () => {
    await startBroker({ LEASE_TTL_DEFAULT_MS: "1500" });
    const grpcClient = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    const stub = new StreamClient(createClient(ProxyBroker, grpcClient));
    // a raw-stub worker (no snapshot, no fallback pool) holds a lease it keeps to its end
    expect(granted(await stub.acquire({ domain: DOMAIN, workerId: "raw-stub", ttlMs: 1_500 })).leaseId).not.toBe("");
    const taker = client(broker.address, "taker");
    await fallbackReadyFor(taker, [`https://${DOMAIN}/`]);
    await expect.poll(() => taker.fallbackUsable && taker.fallback.snapshot?.workersWithoutFallback === 1, { timeout: 5_000 }).toBe(true);
    await broker.kill();
    const killedAt = Date.now();
    stub.cancel();
    grpcClient.close();
    const got = await grabShare(taker, Date.now() + 5_000);
    expect(got.length).toBeGreaterThan(0);
    // the longest TTL (1.5 s) after entering fallback, which came a few ms after the kill
    expect(got[0]!.at - killedAt).toBeGreaterThanOrEqual(1_450);
  });

  it("network cut silently: the cut-off worker serves its claim once the broker reserved it, and the other worker's leases on it were revoked at once, long before their TTL", async () => {
    await startBroker({ WORKER_ABSENT_AFTER_MS: "1000", LEASE_TTL_DEFAULT_MS: "30000" });
    const relay = await startTcpRelay(broker.address);
    relays.push(relay);
    const cutOff = client(relay.address, "cut-off");
    const other = client(broker.address, "other");
    // 30 s leases, renewed every 10 s: only a revocation ends them within the test
    const { held, aborted } = await holdAll(other, 30_000);
    await fallbackReadyFor(other, [`https://${DOMAIN}/`]);
    await fallbackReadyFor(cutOff, [`https://${DOMAIN}/`]);
    await expect.poll(() => cutOff.fallbackUsable && other.fallbackUsable, { timeout: 5_000 }).toBe(true);
    const share = [...cutOff.fallback.share];
    expect(share.length).toBeGreaterThan(0);
    expect(share.length).toBeLessThan(PROXIES.length);
    // the claim the broker acknowledged: the site, from the share (the other worker is listed on it too)
    expect(cutOff.fallback.acknowledgedClaim?.keys.map((k) => [k.domainKey, k.whole])).toEqual([[DOMAIN, false]]);
    relay.cut();
    const cutAt = Date.now();
    const got = await grabShare(cutOff, Date.now() + 15_000);
    expect(got.map((g) => g.proxy).sort()).toEqual([...share].sort());
    // not before the broker surely reserved the claim (WORKER_ABSENT_AFTER_MS 1 s + 0.5 s + 0.5 s)
    // and any other worker cut off too would have stopped (3 s + 0.5 s), counted from the last pong
    // (at most a ping period, 333 ms, before the cut)
    const firstMs = got[0]!.at - cutAt;
    expect(firstMs).toBeGreaterThanOrEqual(5_500 - 400);
    expect(firstMs).toBeLessThan(10_000);
    const window = overlapMs(got.map((g) => ({ proxy: g.proxy, abortedAt: aborted.get(g.proxy), grantedAt: g.at })));
    expect(window).toBeLessThanOrEqual(0);
    // the other worker lost every lease the cut-off worker might use — revoked a few seconds after
    // the cut (LeaseLost pushed on its stream), not at their 30 s TTL — and only those
    for (const l of held) expect(l.signal.aborted, l.proxy.id).toBe(share.includes(l.proxy.id));
    for (const id of share) expect(aborted.get(id)! - cutAt, id).toBeLessThan(4_000);
    console.info(`silent cut: fallback ${firstMs} ms after the cut, ${-window} ms after the other worker gave the last pair up`);
  });

  it("network cut silently: in fallback, no half-open probe is sent into the silent connection (none stalls its caller)", async () => {
    await startBroker({ WORKER_ABSENT_AFTER_MS: "1000" });
    const relay = await startTcpRelay(broker.address);
    relays.push(relay);
    const solo = client(relay.address, "solo-cut");
    await fallbackReadyFor(solo, [`https://${DOMAIN}/`]);
    await expect.poll(() => solo.fallbackUsable, { timeout: 5_000 }).toBe(true);
    relay.cut();
    // in fallback once the claim is surely its own
    await expect
      .poll(
        async () => {
          const l = await solo.acquire(`https://${DOMAIN}/first`, { maxWaitMs: 200 }).catch(() => undefined);
          await l?.release({ kind: "SUCCESS" });
          return l?.source;
        },
        { timeout: 15_000, interval: 100 },
      )
      .toBe("fallback");
    // Then acquire after acquire over several breaker reset periods (300 ms). A half-open probe
    // would be sent into the silent connection, where it waits out its caller's deadline (the
    // whole maxWaitMs and the call timeout: seconds of a crawl loop) and then opens the breaker
    // again; served from the fallback pool instead, the breaker never fails a probe meanwhile.
    const states: string[] = [];
    solo.on("breaker", (state) => states.push(state));
    const until = Date.now() + 2_000;
    let served = 0;
    while (Date.now() < until) {
      const l = await solo.acquire(`https://${DOMAIN}/again`, { maxWaitMs: 5_000 });
      expect(l.source).toBe("fallback");
      await sleep(5); // the request through the proxy (timers run meanwhile: the breaker half-opens)
      await l.release({ kind: "SUCCESS" });
      served++;
    }
    expect(served).toBeGreaterThan(1);
    expect(states).not.toContain("open");
    expect(solo.mode).toBe("fallback");
    // healed: the pings hear the broker again, and the next acquires probe it and go back
    relay.heal();
    await expect
      .poll(
        async () => {
          const l = await solo.acquire(`https://${DOMAIN}/back`, { maxWaitMs: 200 }).catch(() => undefined);
          await l?.release({ kind: "SUCCESS" });
          return l?.source;
        },
        { timeout: 15_000, interval: 100 },
      )
      .toBe("broker");
  }, 45_000);

  it("back with the broker: a fallback lease released while its hand-over was asked for leaves its pair free", async () => {
    // a leaked hand-over grant would hold its pair for this long
    await startBroker({ LEASE_TTL_DEFAULT_MS: "20000" });
    const solo = client(broker.address, "solo");
    await fallbackReadyFor(solo, [`https://${DOMAIN}/`]);
    await broker.kill();
    // alone on the site: in fallback it may use every proxy
    const leases: Lease[] = [];
    const until = Date.now() + 5_000;
    while (leases.length < PROXIES.length && Date.now() < until) {
      try {
        leases.push(await solo.acquire(`https://${DOMAIN}/fallback`, { maxWaitMs: 200 }));
      } catch {
        // not yet in fallback
      }
    }
    expect(leases.length).toBe(PROXIES.length);
    expect(leases.every((l) => l.source === "fallback")).toBe(true);
    // the requests end one by one, while the hand-overs of their leases are on their way
    solo.on("mode", (mode) => {
      if (mode === "broker") for (const [i, l] of leases.entries()) setTimeout(() => void l.release({ kind: "SUCCESS" }), i);
    });
    await broker.start();
    // its next acquire finds the broker back (the breaker's probe), and the switch starts
    await expect
      .poll(
        async () => {
          const l = await solo.acquire(`https://next.${DOMAIN}/`, { maxWaitMs: 100 }).catch(() => undefined);
          await l?.release({ kind: "SUCCESS" });
          return leases.every((x) => x.ended);
        },
        { timeout: 5_000, interval: 100 },
      )
      .toBe(true);
    // once the broker lifted solo's reservations, every pair is free for another worker
    await sleep(LIFT_AFTER_MS + 1_500);
    const grpcClient = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    const other = new StreamClient(createClient(ProxyBroker, grpcClient));
    try {
      const refused: string[] = [];
      for (const l of leases) {
        const a = await other.acquire({ domain: DOMAIN, workerId: "other", proxyId: l.proxy.id, ttlMs: 1_000, maxWaitMs: 1_500 });
        if (a.case !== "granted") refused.push(l.proxy.id);
      }
      expect(refused).toEqual([]);
    } finally {
      other.cancel();
      grpcClient.close();
    }
  });
});
