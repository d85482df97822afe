/**
 * The conformance suite against the Redis store: one throwaway redis-server for the file, a
 * fresh random key prefix per test, its keys deleted afterwards.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DEFAULT_SCORING, policySpec, type AcquireParams } from "@proxybroker/sdk/model";
import { acq } from "../../../sdk/engine/conformance/harness.js";
import { createRedisClient, RedisStore } from "../../../../src/store/redis/index.js";
import { fakeClock, seededRandom } from "../../../support/fake-clock.js";
import { withRedis } from "../../../support/with-redis.js";
import { describeStoreConformance } from "../../../sdk/engine/conformance/index.js";

const redis = withRedis();

/** Delete every key whose name contains `token`. */
function deleteKeys(token: string): Promise<void> {
  return redis.deleteKeys(`*${token}*`);
}

/** A store on a fresh key prefix with a fake clock (its keys: those containing `token`). */
function prefixedStore(seed: number, workerRefreshMs = 0) {
  const token = randomBytes(6).toString("hex");
  const clock = fakeClock();
  const store = new RedisStore({
    client: createRedisClient({ url: redis.url() }),
    scoring: DEFAULT_SCORING,
    clock: () => clock.now(),
    random: seededRandom(seed),
    prefix: `pbt-${token}:`,
    workerRefreshMs,
  });
  return { token, clock, store };
}

/** Acquire parameters of the default pool for shop.example.com at policy `version`. */
function shopParams(version: string): AcquireParams {
  return acq({ workerId: "w", adaptive: true, banTtlMs: 60_000, policyVersion: version });
}

describeStoreConformance("RedisStore", async ({ clock, random, scoring }) => {
  const token = randomBytes(6).toString("hex");
  const client = createRedisClient({ url: redis.url() });
  const store = new RedisStore({ client, scoring, clock, random, prefix: `pbt-${token}:` });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await deleteKeys(token);
    },
  };
});

describe("RedisStore keys", () => {
  it("carry the store's prefix, and all keys of one pool share the pool's hash tag", async () => {
    const { token, clock, store } = prefixedStore(7);
    try {
      const pool = "tagged";
      await store.addProxies(pool, [{ id: "10.2.0.1:3128", url: "http://10.2.0.1:3128", tier: "datacenter", labels: { country: "de" } }]);
      await store.setPolicy(pool, policySpec({ pattern: "*", maxConcurrency: 1 }));
      await store.setPolicy(pool, policySpec({ pattern: "*", maxConcurrency: 1, group: "all" }));
      const params: AcquireParams = {
        pool,
        domainKey: "all",
        workerId: "w",
        ttlMs: 30_000,
        maxConcurrency: 1,
        minIntervalMs: 1_000,
        pacing: "release",
        jitterMs: 100,
        adaptive: true,
        maxIntervalMs: 60_000,
        shadowKeys: ["shop.example.com"],
        requestId: "",
        proxyId: "",
        banTtlMs: 60_000,
        policyVersion: (await store.listPolicies(pool)).version,
        sessionKey: "s",
        sessionTtlMs: 600_000,
        tier: "datacenter",
        labels: { country: "de" },
      };
      for (const kind of ["RATE_LIMITED", "BLOCKED"] as const) {
        const r = await store.acquire(params);
        expect(r.kind).toBe("granted");
        if (r.kind === "granted") {
          await store.release({
            leaseId: r.lease.leaseId,
            fencingToken: r.lease.fencingToken,
            outcome: { kind, httpStatus: 403, latencyMs: 10, retryAfterMs: 0 },
          });
        }
        clock.advance(5_000);
      }
      expect(await store.domainPacing(pool, [], 10)).toHaveLength(1);
      const all = await redis.admin().keys("*");
      const mine = all.filter((k) => k.includes(token));
      expect(mine.length).toBeGreaterThan(0);
      expect(
        all.filter((k) => !k.includes("pbt-")),
        "keys without a test prefix",
      ).toEqual([]);
      const tags = new Set(mine.map((k) => /\{([^}]*)\}/.exec(k)?.[1]));
      expect(tags.size, `hash tags of ${JSON.stringify(mine)}`).toBe(1);
      expect([...tags][0]).toContain(pool);
    } finally {
      await store.close();
      await deleteKeys(token);
    }
  });
});

describe("RedisStore worker marks", () => {
  it("an acquire records its worker again only once workerRefreshMs passed, at once after a forget or a fallback mark", async () => {
    const { token, clock, store } = prefixedStore(3, 1_000);
    try {
      await store.addProxies("default", [{ id: "10.3.0.9:3128", url: "http://10.3.0.9:3128", tier: "", labels: {} }]);
      const params = shopParams((await store.listPolicies("default")).version);
      const seenAt = async () => (await store.liveWorkers("default", 0)).find((w) => w.workerId === "w");
      const t0 = clock.now();
      await store.acquire(params);
      clock.advance(999);
      await store.acquire(params);
      expect((await seenAt())?.lastSeenAt).toBe(t0);
      clock.advance(1);
      await store.acquire(params);
      expect((await seenAt())?.lastSeenAt).toBe(t0 + 1_000);
      // saying it keeps a fallback pool is recorded at once
      clock.advance(10);
      await store.acquire({ ...params, fallbackPool: true });
      expect(await seenAt()).toEqual({ workerId: "w", lastSeenAt: t0 + 1_010, fallbackPoolAt: t0 + 1_010 });
      // a worker that left is live again with its next acquire
      expect(await store.forgetWorker("default", "w")).toBe(true);
      clock.advance(10);
      await store.acquire(params);
      expect((await seenAt())?.lastSeenAt).toBe(t0 + 1_020);
      // an acquire answered stale is not a sighting (see acquireCore.lua), and gives its mark
      // back: the worker's next real acquire, moments later, records it
      expect((await store.acquire({ ...params, workerId: "w2", policyVersion: "stale.0" })).kind).toBe("stale-policy");
      expect((await store.liveWorkers("default", 0)).map((w) => w.workerId)).not.toContain("w2");
      clock.advance(1);
      await store.acquire({ ...params, workerId: "w2" });
      expect((await store.liveWorkers("default", 0)).find((w) => w.workerId === "w2")?.lastSeenAt).toBe(clock.now());
    } finally {
      await store.close();
      await deleteKeys(token);
    }
  });
});

describe("RedisStore raisePacing", () => {
  it("raises a domain-key's interval and learned limit, never lowers them, and replaces a learned limit past the memory", async () => {
    const { token, clock, store } = prefixedStore(4);
    try {
      const t0 = clock.now();
      const state = async () => (await store.domainPacing("default", ["a.example"], 1))[0];
      await store.raisePacing("default", { domainKey: "a.example", adaptiveMs: 800, learnedMs: 5_000, learnedAt: t0, loweredAt: 0 });
      expect(await state()).toMatchObject({ adaptiveMs: 800, learnedMs: 5_000, learnedAt: t0 });
      // lower: nothing changes
      await store.raisePacing("default", { domainKey: "a.example", adaptiveMs: 600, learnedMs: 3_000, learnedAt: t0 + 1, loweredAt: 0 });
      expect(await state()).toMatchObject({ adaptiveMs: 800, learnedMs: 5_000, learnedAt: t0 });
      // the learned limit is forgotten after the memory: a fresher, lower one replaces it
      const later = clock.advance(DEFAULT_SCORING.adaptive.memoryMs + 1);
      await store.raisePacing("default", { domainKey: "a.example", adaptiveMs: 700, learnedMs: 3_000, learnedAt: later, loweredAt: 0 });
      expect(await state()).toMatchObject({ adaptiveMs: 800, learnedMs: 3_000, learnedAt: later });
      expect((await store.domainPacing("default", [], 10)).map((p) => p.domainKey)).toEqual(["a.example"]);
    } finally {
      await store.close();
      await deleteKeys(token);
    }
  });
});

describe("RedisStore released leases", () => {
  it("leave no key behind; a retried release of one of the pair's last 4 answers released, an older one NOT_FOUND", async () => {
    const { token, clock, store } = prefixedStore(5);
    const success = { kind: "SUCCESS", httpStatus: 200, latencyMs: 5, retryAfterMs: 0 } as const;
    try {
      await store.addProxies("default", [{ id: "10.3.0.1:3128", url: "http://10.3.0.1:3128", tier: "", labels: {} }]);
      const params = shopParams((await store.listPolicies("default")).version);
      const leases = [];
      for (let i = 0; i < 50; i++) {
        const r = await store.acquire(params);
        if (r.kind !== "granted") throw new Error(`expected a grant, got ${r.kind}`);
        expect(await store.release({ leaseId: r.lease.leaseId, fencingToken: r.lease.fencingToken, outcome: success })).toEqual({
          kind: "released",
        });
        leases.push(r.lease);
        clock.advance(1);
      }
      const keys = (await redis.admin().keys(`*${token}*`)).filter((k) => /:l:[0-9a-f]+$/.test(k));
      expect(keys, "lease tombstones").toEqual([]);
      for (const lease of leases.slice(-4)) {
        expect(await store.release({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: success })).toEqual({
          kind: "released",
        });
        expect(await store.release({ leaseId: lease.leaseId, fencingToken: lease.fencingToken + 1, outcome: success })).toEqual({
          kind: "lost",
          reason: "REVOKED",
        });
      }
      const older = leases[45]!;
      expect(await store.release({ leaseId: older.leaseId, fencingToken: older.fencingToken, outcome: success })).toEqual({
        kind: "lost",
        reason: "NOT_FOUND",
      });
      const view = (await store.listProxies("default", { size: 10, after: "" })).proxies[0];
      expect(view?.successCount).toBe(50);
    } finally {
      await store.close();
      await deleteKeys(token);
    }
  });
});

describe("RedisStore after a loss of state", () => {
  it("a wiped pool gets a new epoch with grants held, and fencing tokens keep increasing", async () => {
    const { token, clock, store } = prefixedStore(11);
    const params = shopParams;
    const proxy = { id: "10.9.0.1:3128", url: "http://10.9.0.1:3128", tier: "", labels: {} };
    try {
      await store.addProxies("default", [proxy]);
      const before = await store.ensureEpoch("default", { expected: "", holdMs: 30_000, lost: false });
      const v1 = (await store.listPolicies("default")).version;
      const r1 = await store.acquire(params(v1));
      if (r1.kind !== "granted") throw new Error(`expected a grant, got ${r1.kind}`);
      // the pool's keys are gone (FLUSHALL, a restart without persistence)
      await deleteKeys(token);
      clock.advance(5);
      expect((await store.acquire(params(v1))).kind).toBe("stale-policy");
      const after = await store.ensureEpoch("default", { expected: before.epoch, holdMs: 30_000, lost: false });
      expect(after.epoch).not.toBe(before.epoch);
      expect(after.grantsFrom).toBe(clock.now() + 30_000);
      const v2 = (await store.listPolicies("default")).version;
      expect(v2).not.toBe(v1);
      await store.addProxies("default", [proxy]);
      expect(await store.acquire(params(v2))).toEqual({ kind: "denied", retryAfterMs: 30_000 });
      clock.advance(30_000);
      const r2 = await store.acquire(params(v2));
      if (r2.kind !== "granted") throw new Error(`expected a grant, got ${r2.kind}`);
      expect(r2.lease.fencingToken).toBeGreaterThan(r1.lease.fencingToken);
    } finally {
      await store.close();
      await deleteKeys(token);
    }
  });
});
