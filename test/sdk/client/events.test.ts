import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import type { ClientMode, ClientOptions, LeaseLostEvent } from "@proxybroker/sdk";
import { fallbackReadyFor } from "../../support/fallback-ready.js";
import { brokerProcess } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { startRedisServer } from "../../support/redis-server.js";
import type { RedisServer } from "../../support/redis-server.js";

const PROXIES = Array.from({ length: 6 }, (_, i) => `10.7.0.${i + 1}:3128`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Everything a client emitted, in order. */
interface Seen {
  readonly modes: ClientMode[];
  readonly lost: LeaseLostEvent[];
  readonly dropped: number[];
  ready: number;
}

function watch(c: ProxyBrokerClient): Seen {
  const seen: Seen = { modes: [], lost: [], dropped: [], ready: 0 };
  c.on("mode", (mode) => seen.modes.push(mode));
  c.on("leaseLost", (lost) => seen.lost.push(lost));
  c.on("outcomesDropped", (count) => seen.dropped.push(count));
  c.on("fallbackReady", () => (seen.ready += 1));
  return seen;
}

/** The client's events and its read-only fallback pool, against a broker process on a real redis-server. */
describe("ProxyBrokerClient events", () => {
  let redis: RedisServer;
  let broker: BrokerProcess;
  let dir: string;
  const clients: ProxyBrokerClient[] = [];

  const newClient = (workerId: string, extra: Partial<ClientOptions> = {}) => {
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
  const admin = () => createClient(ProxyAdmin, new grpc.Client(broker.address, grpc.credentials.createInsecure()));

  beforeAll(async () => {
    redis = await startRedisServer();
    dir = await mkdtemp(join(tmpdir(), "pb-sdk-events-"));
    await writeFile(join(dir, "proxies.txt"), PROXIES.join("\n"));
    broker = await brokerProcess({
      redisUrl: redis.url,
      env: { PROXIES_FILE: join(dir, "proxies.txt"), FALLBACK_WINDOW_MS: "1000", LEASE_TTL_DEFAULT_MS: "1000" },
    });
  });
  afterAll(async () => {
    await broker.stop();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await broker.start();
    await sleep(1_000); // no reservations left of this test's workers
  });

  it("fallbackReady when the share becomes usable, again after it emptied and came back", async () => {
    await broker.start();
    const c = newClient("ready");
    const seen = watch(c);
    expect(seen.ready).toBe(0);
    await fallbackReadyFor(c, ["ready.example"]);
    expect(c.fallbackUsable).toBe(true);
    expect(seen.ready).toBe(1);
    const a = admin();
    try {
      // every proxy disabled: the next snapshot gives this worker an empty share
      await a.disableProxies({ pool: "default", ids: PROXIES });
      await expect.poll(() => c.fallback.hasPool, { timeout: 5_000 }).toBe(false);
      expect(c.fallbackUsable).toBe(false);
      expect(seen.ready).toBe(1);
      await a.enableProxies({ pool: "default", ids: PROXIES });
      await expect.poll(() => c.fallbackUsable, { timeout: 5_000 }).toBe(true);
      expect(seen.ready).toBe(2);
    } finally {
      a.grpcClient.close();
    }
  });

  it("leaseLost for every lost lease, with its id, reason and source; outcomesDropped when the buffer overflows", async () => {
    await broker.start();
    const c = newClient("lost", { fallback: { snapshotRefreshMs: 200, membershipRefreshMs: 200, maxBufferedOutcomes: 3 } });
    const seen = watch(c);
    const drops = [0, 1, 2, 3, 4].map((i) => `https://drop${i}.example/`);
    await fallbackReadyFor(c, [...drops, "held.example", "local.example"]);
    // lost at the broker: no heartbeat, renewed too late
    const expired = await c.acquire("expired.example", { ttlMs: 100, heartbeat: false });
    await sleep(200);
    await expect(expired.renew()).rejects.toMatchObject({ reason: "EXPIRED" });
    expect(seen.lost).toEqual([{ leaseId: expired.id, reason: "EXPIRED", source: "broker" }]);
    // a released lease is not lost
    await (await c.acquire("released.example")).release({ kind: "SUCCESS" });
    expect(seen.lost).toHaveLength(1);

    const held = await c.acquire("held.example", { ttlMs: 300 });
    await broker.kill();
    const share = c.fallback.share;
    for (const drop of drops) {
      const l = await c.acquire(drop);
      expect(l.source).toBe("fallback");
      await l.release({ kind: "SUCCESS" });
    }
    // five outcomes into a buffer of three: two dropped, reported as they went
    expect(c.fallback.bufferedOutcomes).toBe(3);
    expect(c.fallback.droppedOutcomes).toBe(2);
    expect(seen.dropped).toEqual([1, 1]);
    // the broker lease: kept busy in the fallback pool entering fallback (this worker alone leased
    // held.example: every proxy is its own for it), and expired (not renewable)
    expect(share.length).toBeGreaterThan(0);
    await expect.poll(() => held.signal.aborted, { timeout: 2_000 }).toBe(true);
    expect(seen.lost).toContainEqual({ leaseId: held.id, reason: "EXPIRED", source: "broker" });
    // a fallback lease past its deadline
    const local = await c.acquire("local.example", { ttlMs: 150, heartbeat: false });
    expect(local.source).toBe("fallback");
    await expect.poll(() => local.signal.aborted, { timeout: 2_000 }).toBe(true);
    expect(seen.lost.at(-1)).toEqual({ leaseId: local.id, reason: "EXPIRED", source: "fallback" });
    expect(seen.lost).toHaveLength(3);
    expect(seen.modes).toEqual(["fallback"]);
  });

  it("exposes the fallback pool read-only", async () => {
    await broker.start();
    const c = newClient("view");
    await fallbackReadyFor(c, ["view.example"]);
    const view = c.fallback;
    expect(view.share.length).toBeGreaterThan(0);
    expect(view.snapshot?.liveWorkers).toContain("view");
    expect(Object.isFrozen(view)).toBe(true);
    expect(Object.isFrozen(view.share)).toBe(true);
    // nothing of the pool itself is reachable: no methods, and no field can be set
    expect(Object.keys(view).sort()).toEqual([
      "acknowledgedClaim",
      "bufferedOutcomes",
      "droppedOutcomes",
      "hasPool",
      "readyDomains",
      "share",
      "snapshot",
    ]);
    expect(view.readyDomains).toEqual(["view.example"]);
    expect(Object.isFrozen(view.readyDomains)).toBe(true);
    expect("acquire" in view || "useSnapshot" in view || "drainOutcomes" in view).toBe(false);
    expect(() => ((view as unknown as { hasPool: boolean }).hasPool = false)).toThrow(TypeError);
    expect(() => (view.share as string[]).push("10.0.0.1:1")).toThrow(TypeError);
    expect(view.hasPool).toBe(true);
  });

  // Last: a worker without fallback pool makes the fleet "mixed", which lengthens the hold of later fallbacks.
  it("fallbackReady one membership period + 1 s after the worker first leased a site, not at later periodic refreshes", async () => {
    await broker.start();
    const c = newClient("prompt", { fallback: { snapshotRefreshMs: 60_000, membershipRefreshMs: 3_000 } });
    const seen = watch(c);
    await expect.poll(() => c.fallback.snapshot?.liveWorkers.includes("prompt") === true, { timeout: 5_000, interval: 20 }).toBe(true);
    await (await c.acquire("prompt.example")).release({ kind: "SUCCESS" });
    const leasedAt = Date.now();
    await expect.poll(() => seen.ready, { timeout: 10_000, interval: 20 }).toBe(1);
    const waited = Date.now() - leasedAt;
    // the rule: listed with the site across a membership period + 1 s (4 s here) ...
    expect(waited).toBeGreaterThanOrEqual(4_000);
    // ... the listing fetched about a second after the lease (not at the next periodic refresh,
    // 3 s after the list just seen), and checked at that moment: 5.1 s, not 7 s or more
    expect(waited).toBeLessThan(5_700);
    expect(c.fallbackUsable).toBe(true);
    expect(c.fallback.readyDomains).toEqual(["prompt.example"]);
  });

  it("never fallbackReady without a fallback pool", async () => {
    await broker.start();
    const c = newClient("no-fallback", { fallback: { enabled: false } });
    const seen = watch(c);
    await (await c.acquire("warm.example")).release({ kind: "SUCCESS" });
    await sleep(1_000);
    expect(c.fallbackUsable).toBe(false);
    expect(seen.ready).toBe(0);
  });
});
