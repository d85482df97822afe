import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { InvalidArgumentError, LeaseLostError, ProxyBrokerClient } from "@proxybroker/sdk";
import type { Lease } from "@proxybroker/sdk";
import { fallbackReadyFor } from "../../support/fallback-ready.js";
import { brokerProcess } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { startRedisServer } from "../../support/redis-server.js";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { createRedisClient, RedisStore } from "../../../src/store/redis/index.js";
import type { RedisServer } from "../../support/redis-server.js";

const PROXIES = Array.from({ length: 12 }, (_, i) => `10.9.0.${i + 1}:3128`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The SDK against a real broker process on a real redis-server. */
describe("ProxyBrokerClient", () => {
  let redis: RedisServer;
  let broker: BrokerProcess;
  let dir: string;
  const clients: ProxyBrokerClient[] = [];

  const newClient = (workerId: string, extra: Partial<ConstructorParameters<typeof ProxyBrokerClient>[0]> = {}) => {
    const c = new ProxyBrokerClient({
      address: broker.address,
      workerId,
      breaker: { callTimeoutMs: 1_000, resetTimeoutMs: 300, volumeThreshold: 1 },
      fallback: { snapshotRefreshMs: 200, membershipRefreshMs: 200 },
      ...extra,
    });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    redis = await startRedisServer();
    dir = await mkdtemp(join(tmpdir(), "pb-sdk-"));
    await writeFile(join(dir, "proxies.txt"), PROXIES.join("\n"));
    // Workers of earlier tests, gone when the broker restarts, keep their shares reserved only
    // for FALLBACK_WINDOW_MS: short here, so that each test starts with the whole pool.
    broker = await brokerProcess({
      redisUrl: redis.url,
      env: { PROXIES_FILE: join(dir, "proxies.txt"), FALLBACK_WINDOW_MS: "1000", LEASE_TTL_DEFAULT_MS: "1000" },
    });
    // Started here, not by the first test that needs it: on a loaded machine a start can take
    // more than ten seconds, most of a test's time.
    await broker.start();
  });
  afterAll(async () => {
    await broker.stop();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(ownBrokers.splice(0).map((b) => b.stop()));
    await broker.start(); // every test starts with a broker up
    await sleep(1_000); // and no reservations left of this test's workers
  });

  // Fallback lasts until the broker's last answer is older than its fallback window (less 10 %).
  // The shared broker's 1 s window leaves a test that kills it a few hundred ms of fallback, which
  // a loaded machine spends before the test's fallback leases are done: such a test runs a broker
  // of its own, on keys of its own, with a window far longer.
  const ownBrokers: BrokerProcess[] = [];
  let ownPrefixes = 0;
  const ownBroker = async (): Promise<BrokerProcess> => {
    const b = await brokerProcess({
      redisUrl: redis.url,
      env: {
        PROXIES_FILE: join(dir, "proxies.txt"),
        FALLBACK_WINDOW_MS: "30000",
        LEASE_TTL_DEFAULT_MS: "1000",
        REDIS_KEY_PREFIX: `pbown${ownPrefixes++}`,
      },
    });
    ownBrokers.push(b);
    await b.start();
    return b;
  };

  it("refuses bad options with InvalidArgumentError", () => {
    expect(() => new ProxyBrokerClient({ address: "nowhere" })).toThrow(InvalidArgumentError);
    expect(() => new ProxyBrokerClient({ address: "127.0.0.1:1", pool: "bad pool" })).toThrow(/pool/);
    expect(() => new ProxyBrokerClient({ address: "127.0.0.1:1", breaker: { resetTimeoutMs: -1 } })).toThrow(/resetTimeoutMs/);
    expect(() => new ProxyBrokerClient({ address: "127.0.0.1:1", fallback: { staticProxies: ["ftp://x:1"] } })).toThrow(
      /staticProxies\[0\]/,
    );
  });

  it("keeps a lease alive with heartbeats for 3× its TTL; others cannot get its proxy", async () => {
    await broker.start();
    const a = newClient("hb-a");
    const b = newClient("hb-b");
    const held: Lease[] = [];
    // Renewed every third of the TTL, each renewal must be back within the other two thirds: of a
    // 600 ms TTL, 400 ms, which a loaded machine's renewal round trip can exceed.
    for (let i = 0; i < PROXIES.length; i++) held.push(await a.acquire("https://hb.example/x", { ttlMs: 1_500 }));
    await sleep(4_500);
    for (const l of held) {
      expect(l.signal.aborted).toBe(false);
      expect(l.expireAt).toBeGreaterThan(Date.now());
    }
    await expect(b.acquire("https://hb.example/y")).rejects.toThrow(/no eligible proxy|no proxy/);
    await Promise.all(held.map((l) => l.release({ kind: "SUCCESS" })));
    expect((await b.acquire("https://hb.example/y")).source).toBe("broker");
  });

  it("says, with each snapshot or membership fetch, the time of the latest list it holds", async () => {
    await broker.start();
    const c = newClient("lists");
    await expect.poll(() => c.fallback.snapshot?.liveWorkers.includes("lists") === true, { timeout: 5_000, interval: 20 }).toBe(true);
    const store = new RedisStore({ client: createRedisClient({ url: redis.url }), scoring: DEFAULT_SCORING, prefix: "pb" });
    try {
      const seen = async () => (await store.liveWorkers("default", 0)).find((w) => w.workerId === "lists");
      await expect.poll(async () => (await seen())?.listsAt ?? 0, { timeout: 5_000, interval: 50 }).toBeGreaterThan(0);
      // a list it took in (the one before its latest fetch): not later than that fetch, and recent
      const w = (await seen())!;
      expect(w.listsAt!).toBeLessThanOrEqual(w.lastSeenAt);
      expect(w.lastSeenAt - w.listsAt!).toBeLessThan(2_000);
    } finally {
      await store.close();
    }
  });

  it("aborts a lost lease's signal", async () => {
    await broker.start();
    const c = newClient("lost");
    const lease = await c.acquire("lost.example", { ttlMs: 100, heartbeat: false });
    await sleep(200);
    await expect(lease.renew()).rejects.toBeInstanceOf(LeaseLostError);
    expect(lease.signal.aborted).toBe(true);
    expect((lease.signal.reason as LeaseLostError).reason).toBe("EXPIRED");
  });

  it("keeps to the TTL the broker granted: a silent worker's pair, before its reservation holds, is given up by then", async () => {
    await broker.start();
    const c = newClient("gap");
    // the broker has written this pool's reservations once (nothing silent): the one below stays
    await (await c.acquire("warm.example", { ttlMs: 1_000 })).release({ kind: "SUCCESS" });
    const store = new RedisStore({ client: createRedisClient({ url: redis.url }), scoring: DEFAULT_SCORING, prefix: "pb" });
    try {
      const from = Date.now() + 2_500;
      await store.reserve("default", {
        proxies: Object.fromEntries(PROXIES.map((p) => [p, "silent"])),
        domains: {},
        from: { silent: from },
      });
      const lease = await c.acquire("gap.example", { ttlMs: 30_000 });
      expect(lease.expireAt).toBeLessThanOrEqual(from);
      const lost = await new Promise<LeaseLostError>((resolve) =>
        lease.signal.addEventListener("abort", () => resolve(lease.signal.reason as LeaseLostError), { once: true }),
      );
      // its heartbeat renewed it up to the reservation at most, then it ran out (or was refused)
      expect(["EXPIRED", "REVOKED"]).toContain(lost.reason);
      await store.reserve("default", { proxies: {}, domains: {} });
    } finally {
      await store.close();
    }
  });

  // a broker of its own to start, kill (and start again): 20 s and more on a loaded machine
  it("serves from fallback within 1 s of the broker being killed, with no error to callers, and aborts leases it can no longer renew", {
    timeout: 45_000,
  }, async () => {
    const own = await ownBroker();
    const c = newClient("failover", { address: own.address });
    // a snapshot has arrived, and it has listed this worker (with the sites it crawls) long enough
    // for others to know it
    const shops = [0, 1, 2, 3].map((i) => `https://shop${i}.example/`);
    await fallbackReadyFor(c, ["https://shop.example/", ...shops]);
    expect(c.fallbackUsable).toBe(true);
    expect(c.fallback.hasPool).toBe(true);
    const held = await c.acquire("held.example", { ttlMs: 300 });
    await own.kill();
    const killedAt = Date.now();
    const lease = await c.acquire("https://shop.example/after-kill");
    const failoverMs = Date.now() - killedAt;
    expect(lease.source).toBe("fallback");
    // Within 1 s: the acquire gives up at its deadline, the 1 s call timeout, unless served by
    // then (a refused connection lets fallback serve at once). This bound only leaves a loaded
    // machine room between the kill and here, still under the 3 s a silent broker takes.
    expect(failoverMs).toBeLessThan(2_500);
    for (let i = 0; i < 20; i++) {
      const l = await c.acquire(shops[i % shops.length]!);
      expect(l.source).toBe("fallback");
      await l.release({ kind: "SUCCESS" });
    }
    await lease.release({ kind: "SUCCESS" });
    expect(c.mode).toBe("fallback");
    // The broker lease cannot be renewed any more: it is aborted once its expiry passes.
    await expect.poll(() => held.signal.aborted, { timeout: 2_000 }).toBe(true);
  });

  it("uses no fallback share when the broker went away before others could refresh their lists with this worker", async () => {
    await broker.start();
    const c = newClient("just-joined");
    // listed once: the others may not have refreshed since, and cannot now
    await expect.poll(() => c.fallback.snapshot?.liveWorkers.includes("just-joined") === true, { timeout: 5_000 }).toBe(true);
    await broker.kill();
    // longer than the membership period + 1 s that used to be enough by itself
    await sleep(1_600);
    expect(c.fallbackUsable).toBe(false);
    await expect(c.acquire("https://shop.example/early", { maxWaitMs: 200 })).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
  });

  // a broker of its own to start, kill (and start again): 20 s and more on a loaded machine
  it("returns to the broker when it is back: the breaker closes and outcomes seen meanwhile reach its scores", {
    timeout: 45_000,
  }, async () => {
    const own = await ownBroker();
    const c = newClient("comeback", { address: own.address });
    const modes: string[] = [];
    c.on("mode", (m: string) => modes.push(m));
    const states: string[] = [];
    c.on("state", ({ from, to }) => states.push(`${from}→${to}`));
    const undelivered = [1, 2, 3, 4, 5, 6].map((i) => `https://undelivered${i}.example/`);
    const comeback = [0, 1, 2, 3].map((i) => `https://comeback${i}.example/`);
    await fallbackReadyFor(c, [...undelivered, ...comeback]);
    const held = await Promise.all(undelivered.map((u) => c.acquire(u)));
    await own.kill();
    const used = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const l = await c.acquire(comeback[i % comeback.length]!);
      expect(l.source).toBe("fallback");
      await l.release({ kind: "SUCCESS" });
      used.add(l.proxy.id);
    }
    // Entering fallback, broker leases this worker's fallback pool may hold go on, their proxies
    // kept busy locally: this worker alone leased those domain-keys, so every proxy is its own
    // for them (handover.test.ts gives up leases outside a shared domain-key's share).
    const kept = held.filter((l) => !l.signal.aborted);
    expect(kept.length).toBe(held.length);
    // Broker leases released while the broker is down: owed, released there once it is back
    // (their outcomes with them: owed.test.ts); only the fallback leases' outcomes wait for replay.
    for (const l of held) await l.release({ kind: "SUCCESS" });
    for (const l of kept) used.add(l.proxy.id);
    expect(c.fallback.bufferedOutcomes).toBe(10);
    await own.start();
    await expect
      .poll(
        async () => {
          const l = await c.acquire("https://after.example/", { heartbeat: false });
          await l.release({ kind: "ABANDONED" });
          return l.source;
        },
        { timeout: 5_000, interval: 50 },
      )
      .toBe("broker");
    expect(modes).toEqual(["fallback", "broker"]);
    // one state change per event: the switch in, done; the hand-over (the probe that closed the
    // breaker may return before it), done
    await expect.poll(() => c.state, { timeout: 3_000 }).toBe("broker");
    expect(states).toEqual(["broker→switching", "switching→fallback", "fallback→handingOver", "handingOver→broker"]);
    await expect.poll(() => c.fallback.bufferedOutcomes, { timeout: 3_000 }).toBe(0);
    const admin = createClient(ProxyAdmin, new grpc.Client(own.address, grpc.credentials.createInsecure()));
    const scores = (await admin.listProxies({ pageSize: 100 })).proxies.filter((p) => used.has(p.id)).map((p) => p.score);
    expect(scores.length).toBe(used.size);
    for (const s of scores) expect(s).toBeGreaterThan(50); // each got at least one replayed +2
    admin.grpcClient.close();
  });

  // a broker of its own to start, kill (and start again): 20 s and more on a loaded machine
  it("gives two clients in fallback disjoint proxies", { timeout: 45_000 }, async () => {
    const own = await ownBroker();
    const a = newClient("share-a", { address: own.address });
    const b = newClient("share-b", { address: own.address });
    // Both lease the site through the broker, so that each lists the other with it: neither is
    // alone on it, and each uses its share of the proxies for it.
    await fallbackReadyFor(a, ["same.example"]);
    await fallbackReadyFor(b, ["same.example"]);
    await expect
      .poll(() => a.fallback.readyDomains.includes("same.example") && a.fallbackUsable && b.fallbackUsable, { timeout: 5_000 })
      .toBe(true);
    await own.kill();
    const leases: Lease[] = [];
    const grab = async (c: ProxyBrokerClient) => {
      for (;;) {
        try {
          leases.push(await c.acquire("same.example"));
        } catch {
          return;
        }
      }
    };
    await Promise.all([grab(a), grab(b)]);
    const ids = leases.map((l) => l.proxy.id);
    expect(leases.every((l) => l.source === "fallback")).toBe(true);
    expect(a.fallback.share.length + b.fallback.share.length).toBeGreaterThan(1);
    expect(a.fallback.share.filter((p) => b.fallback.share.includes(p))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length); // nobody got a proxy twice for one domain
    expect(ids.sort()).toEqual([...a.fallback.share, ...b.fallback.share].sort()); // each used its whole share
  });

  it("falls back while Redis is down under a live broker, then replays outcomes that change the broker's scores", async () => {
    await broker.start();
    const c = newClient("replay");
    const modes: string[] = [];
    c.on("mode", (m: string) => modes.push(m));
    await fallbackReadyFor(
      c,
      [0, 1, 2, 3, 4, 5].map((i) => `https://replay${i}.example/`),
    );
    await redis.stop();
    const stoppedAt = Date.now();
    const failures: string[] = [];
    for (let i = 0; i < 6; i++) {
      const l = await c.acquire(`https://replay${i}.example/`, { maxWaitMs: 2_000 });
      expect(l.source).toBe("fallback");
      // Redis down: nobody can renew, every broker lease runs to its end: nothing is granted
      // before the longest TTL (1 s here) has passed
      if (i === 0) expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(950);
      await l.release({ kind: "PROXY_ERROR" });
      failures.push(l.proxy.id);
    }
    expect(c.fallback.bufferedOutcomes).toBeGreaterThanOrEqual(6);
    await redis.restart();
    // The restarted Redis is empty: load the pool again, as an operator would.
    const admin = createClient(ProxyAdmin, new grpc.Client(broker.address, grpc.credentials.createInsecure()));
    await expect
      .poll(
        () =>
          admin.addProxies({ proxies: PROXIES.map((url) => ({ url })) }).then(
            () => true,
            () => false,
          ),
        { timeout: 8_000 },
      )
      .toBe(true);
    // Acquires probe the broker (half-open) and close the breaker; the replay follows.
    await expect
      .poll(
        async () => {
          const l = await c.acquire("https://back.example/");
          await l.release({ kind: "SUCCESS" });
          return l.source;
        },
        { timeout: 5_000, interval: 100 },
      )
      .toBe("broker");
    expect(modes).toEqual(["fallback", "broker"]);
    await expect.poll(() => c.fallback.bufferedOutcomes, { timeout: 3_000 }).toBe(0);
    const page = await admin.listProxies({ pageSize: 100 });
    const hit = page.proxies.filter((p) => failures.includes(p.id));
    expect(hit.length).toBeGreaterThan(0);
    for (const p of hit) expect(p.score).toBeLessThan(50);
    admin.grpcClient.close();
  });
});
