import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { durationFromMs, durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { OutcomeKind, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import type { StateLoss } from "../../../src/lease/policy-cache.js";
import { BrokerServer } from "../../../src/server/broker-server.js";
import { RedisStore, createRedisClient } from "../../../src/store/redis/index.js";
import { TEST_SETTINGS, uniquePrefix } from "../../support/broker.js";
import { startRedisServer, type RedisServer } from "../../support/redis-server.js";

const TTL_MS = 2_000;
/** A lease held across a restart: the longest TTL granted there lately. */
const LONG_TTL_MS = 6_000;
const PROXIES = ["10.21.0.1:3128", "10.21.0.2:3128"];

/** A broker replica on the test's Redis, with what it told of lost state and changed servers. */
interface Replica {
  readonly server: BrokerServer;
  readonly broker: ClientOf<typeof ProxyBroker>;
  readonly admin: ClientOf<typeof ProxyAdmin>;
  readonly losses: { pool: string; loss: StateLoss }[];
  readonly changes: { id: string; lossless: boolean }[];
  stop(): Promise<void>;
}

async function replica(redisUrl: string, prefix: string): Promise<Replica> {
  const losses: { pool: string; loss: StateLoss }[] = [];
  const changes: { id: string; lossless: boolean }[] = [];
  const store = new RedisStore({ client: createRedisClient({ url: redisUrl }), scoring: DEFAULT_SCORING, prefix });
  const server = await BrokerServer.start({
    store,
    settings: { ...TEST_SETTINGS, ttlDefaultMs: TTL_MS },
    onStateLost: (pool, loss) => losses.push({ pool, loss }),
    onServerChanged: (c) => changes.push(c),
  });
  const channel = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  return {
    server,
    broker: createClient(ProxyBroker, channel),
    admin: createClient(ProxyAdmin, channel),
    losses,
    changes,
    async stop() {
      channel.close();
      await server.shutdown(200);
      await store.close();
    },
  };
}

/** A lease of LONG_TTL_MS through `r`, held (on one of the two proxies; cycles use the other). */
async function holdOne(r: Replica): Promise<void> {
  await r.broker.acquireLease({ workerId: "holder", domain: "site.example", ttl: durationFromMs(LONG_TTL_MS) });
}

/** Grant and release one lease through `r` (pacing none), as a worker would. */
async function cycle(r: Replica, worker: string): Promise<void> {
  const l = (await r.broker.acquireLease({ workerId: worker, domain: "site.example", ttl: durationFromMs(TTL_MS) })).lease!;
  await r.broker.releaseLease({ leaseId: l.leaseId, fencingToken: l.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } });
}

/** How long after now the first acquire through `r` is granted (polling every 50 ms), ms. */
async function firstGrantIn(r: Replica, timeoutMs = 20_000): Promise<number> {
  const start = Date.now();
  for (;;) {
    try {
      await cycle(r, "probe");
      return Date.now() - start;
    } catch {
      if (Date.now() - start > timeoutMs) throw new Error("no grant");
      await new Promise((res) => setTimeout(res, 50));
    }
  }
}

/** Data loss is declared when data was lost, and a hold lasts the longest TTL actually granted (docs/spec.md §6). */
describe("the broker through Redis restarts and losses", () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  /** A Redis with AOF (appendfsync always) that takes a moment to load its data, and a replica on it with proxies. */
  async function setup(opts: { loadDelay?: boolean } = {}): Promise<{ redis: RedisServer; prefix: string; a: Replica; db: Redis }> {
    const dir = await mkdtemp(join(tmpdir(), "pb-loss-"));
    const redis = await startRedisServer({
      persistence: { dir, appendfsync: "always" },
      // 200 µs a key, answering (LOADING) every KiB read: a restart spends seconds loading, visibly
      ...(opts.loadDelay === true ? { args: ["--key-load-delay", "200", "--loading-process-events-interval-bytes", "1024"] } : {}),
    });
    // no ready check: it would wait out a restart's loading, which the tests want to see
    const db = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 100, enableReadyCheck: false });
    db.on("error", () => undefined);
    const prefix = uniquePrefix();
    const a = await replica(redis.url, prefix);
    cleanup.push(async () => {
      db.disconnect();
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    });
    cleanup.push(() => a.stop());
    await a.admin.addProxies({ proxies: PROXIES.map((url) => ({ url })) });
    for (let i = 0; i < 3; i++) await cycle(a, "w1");
    return { redis, prefix, a, db };
  }

  // two Redis restarts that load for seconds each: 10-17 s on a loaded machine, near testTimeout
  it("a clean restart of a durable Redis (AOF, appendfsync always), slow to load, with a replica started while it is down: nothing held", {
    timeout: 45_000,
  }, async () => {
    const { redis, prefix, a, db } = await setup({ loadDelay: true });
    // data enough for the restart to spend seconds loading it (200 µs a key), in the AOF's base
    for (let i = 0; i < 10_000; i += 1_000)
      await db.mset(Object.fromEntries(Array.from({ length: 1_000 }, (_, j) => [`filler:${i + j}`, "x"])));
    await db.bgrewriteaof();
    await expect.poll(async () => /aof_rewrite_in_progress:0/.test(await db.info("persistence")), { timeout: 10_000 }).toBe(true);
    await expect
      .poll(() => a.server.metrics.registry.getSingleMetricAsString("proxybroker_grants_total").then((t) => /pool="default"} 3/.test(t)))
      .toBe(true);

    // a lease that may still be running after the restart: had writes been lost, it would be held for
    await holdOne(a);
    await redis.stop();
    // a second replica starts while Redis is down (an orchestrator restarting things together)
    const b = await replica(redis.url, prefix);
    cleanup.push(() => b.stop());
    const restart = redis.restart();
    // loading: the replicas answer UNAVAILABLE meanwhile, and declare nothing
    await expect
      .poll(async () => /loading:1/.test(await db.info("persistence").catch(() => "")), { timeout: 10_000, interval: 20 })
      .toBe(true);
    await expect(cycle(a, "w1")).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    await restart;
    await expect
      .poll(async () => /loading:0/.test(await db.info("persistence").catch(() => "")), { timeout: 20_000, interval: 20 })
      .toBe(true);
    // grants come back at once through both (the store's check runs every second), not after the
    // 6 s lease held across the restart: a bound under that, with room for a loaded machine
    const seen = () => JSON.stringify({ a: [a.losses, a.changes], b: [b.losses, b.changes], now: Date.now() });
    expect(await firstGrantIn(a), seen()).toBeLessThan(LONG_TTL_MS - 2_000);
    expect(await firstGrantIn(b), seen()).toBeLessThan(LONG_TTL_MS - 2_000);
    expect(a.losses).toEqual([]);
    expect(b.losses).toEqual([]);
    await expect.poll(() => a.changes.length, { timeout: 3_000 }).toBe(1);
    expect(a.changes[0]!.lossless).toBe(true);
    expect(b.changes).toEqual([]);
    expect((await a.admin.getPoolStats({})).grantsHeldUntil).toBeUndefined();
  });

  it("a FLUSHALL holds grants once, for the longest TTL actually granted, and says so in the pool's stats and metrics", async () => {
    const { a, db } = await setup();
    await db.connect();
    await db.flushall();
    const flushedAt = Date.now();
    await a.admin.addProxies({ proxies: PROXIES.map((url) => ({ url })) });
    // the next acquire finds the state lost and holds grants for 2 s (the TTL of the leases granted), not 30 s
    const waited = await firstGrantIn(a);
    expect(waited).toBeGreaterThanOrEqual(TTL_MS - 600);
    // 2 s from when the loss was noticed (a loaded machine's round trips after the flush), far from 30 s
    expect(Date.now() - flushedAt).toBeLessThan(TTL_MS + 5_000);
    expect(a.losses.map((l) => [l.pool, l.loss.certain])).toEqual([["default", true]]);
    const heldUntil = a.losses[0]!.loss.heldUntil;
    expect(heldUntil - flushedAt).toBeLessThanOrEqual(TTL_MS + 5_000);
    // seen while it lasted: GetPoolStats and the metric (checked on a second loss, while it holds)
    await db.flushall();
    await a.admin.addProxies({ proxies: PROXIES.map((url) => ({ url })) });
    await expect(cycle(a, "w1")).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
    const stats = await a.admin.getPoolStats({});
    expect(stats.grantsHeldUntil).toBeDefined();
    expect(timestampMs(stats.grantsHeldUntil!) - Date.now()).toBeLessThanOrEqual(TTL_MS);
    expect(durationMs(stats.longestTtl!)).toBe(TTL_MS);
    await expect
      .poll(
        async () =>
          Number(
            /proxybroker_pool_grants_held_until_seconds\{pool="default"\} (\S+)/.exec(await a.server.metrics.registry.metrics())?.[1] ?? 0,
          ),
        {
          timeout: 3_000,
        },
      )
      .toBeGreaterThan(Date.now() / 1000);
    expect(a.losses.length).toBe(2);
  });

  // a Redis restart that loads for seconds, and a 6 s hold: 17 s on a loaded machine
  it("a restart that may lose writes (appendfsync everysec) holds once, for the longest TTL, from the moment it was noticed", {
    timeout: 45_000,
  }, async () => {
    const { redis, a, db } = await setup({ loadDelay: true });
    await db.connect();
    const configReads = async (): Promise<number> =>
      Number(/^cmdstat_config\|get:calls=(\d+)/m.exec(await db.info("commandstats"))?.[1] ?? 0);
    const readsBefore = await configReads();
    await db.config("SET", "appendfsync", "everysec");
    // the broker reads it at its next store check (every second): two reads after the change, so
    // one has been answered and taken in, however slow the machine (this test reads none)
    await expect.poll(configReads, { timeout: 15_000, interval: 50 }).toBeGreaterThanOrEqual(readsBefore + 2);
    for (let i = 0; i < 10_000; i += 1_000)
      await db.mset(Object.fromEntries(Array.from({ length: 1_000 }, (_, j) => [`filler:${i + j}`, "x"])));
    await db.bgrewriteaof();
    await expect.poll(async () => /aof_rewrite_in_progress:0/.test(await db.info("persistence")), { timeout: 10_000 }).toBe(true);
    await holdOne(a);
    const heldAt = Date.now();
    await redis.restart(); // loads for ~2 s; its configuration file says appendfsync always again
    const upAt = Date.now();
    const waited = await firstGrantIn(a);
    // held: the longest TTL granted there lately (6 s: the lease granted just before, which may
    // still run) from when the change was noticed, once — not a default or the longest TTL allowed
    expect(upAt + waited - heldAt).toBeGreaterThanOrEqual(LONG_TTL_MS - 300);
    // (the bounds: room for a loaded machine's store check and round trips, short of a second hold)
    expect(waited).toBeLessThan(LONG_TTL_MS + 4_000);
    expect(a.changes.map((c) => c.lossless)).toEqual([false]);
    expect(a.losses.map((l) => [l.pool, l.loss.certain])).toEqual([["default", false]]);
    expect(a.losses[0]!.loss.heldUntil - upAt).toBeLessThan(LONG_TTL_MS + 4_000);
    // told once, however many store checks it took
    await new Promise((res) => setTimeout(res, 1_500));
    expect(a.changes.length).toBe(1);
    expect(a.losses.length).toBe(1);
  });

  it("a replica whose connections to Redis were reset, and made again, declares nothing", async () => {
    const { a, db } = await setup();
    await db.connect();
    // every client connection of the broker dropped (a network blip, a proxy restarting)
    await db.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
    expect(await firstGrantIn(a, 10_000)).toBeLessThan(3_000);
    await new Promise((res) => setTimeout(res, 1_200));
    // the same server all along: no change, no loss, and grants at once
    expect(a.changes).toEqual([]);
    expect(a.losses).toEqual([]);
    // at once: under the 2 s hold a declared loss would bring, with room for a loaded round trip
    expect(await firstGrantIn(a)).toBeLessThan(TTL_MS - 500);
  });
});
