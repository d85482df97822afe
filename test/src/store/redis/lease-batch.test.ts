/**
 * Coalesced lease operations (leaseBatch-n.lua): operations that reach the store in one turn go
 * to Redis as one script call per pool, each answered as its own script would answer it.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SCORING, type AcquireParams, type AcquireResult } from "@proxybroker/sdk/model";
import { acq } from "../../../sdk/engine/conformance/harness.js";
import { createRedisClient, RedisStore } from "../../../../src/store/redis/index.js";
import { acquireArgs, acquireKeys, scriptConstants } from "../../../../src/store/redis/args.js";
import { KeyBuilder } from "../../../../src/store/redis/keys.js";
import { LeaseBatcher } from "../../../../src/store/redis/lease-batch.js";
import { ScriptRunner } from "../../../../src/store/redis/scripts.js";
import { SCRIPT_ARGS } from "../../../../src/store/redis/script-args.js";
import { fakeClock, seededRandom } from "../../../support/fake-clock.js";
import { startRedisServer, type RedisServer } from "../../../support/redis-server.js";

let server: RedisServer;
let admin: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

const SUCCESS = { kind: "SUCCESS", httpStatus: 200, latencyMs: 5, retryAfterMs: 0 } as const;

/** Script calls Redis ran since the last reset (EVALSHA and EVAL). */
async function scriptCalls(): Promise<number> {
  const info = await admin.info("commandstats");
  let n = 0;
  for (const m of info.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)) n += Number(m[2]);
  return n;
}

async function openStore(maxBatch?: number) {
  const prefix = `pbt-${randomBytes(6).toString("hex")}:`;
  const clock = fakeClock();
  const store = new RedisStore({
    client: createRedisClient({ url: server.url }),
    scoring: DEFAULT_SCORING,
    clock: () => clock.now(),
    random: seededRandom(3),
    prefix,
    ...(maxBatch === undefined ? {} : { maxBatch }),
  });
  const params = async (pool: string, over: Partial<AcquireParams> = {}): Promise<AcquireParams> =>
    acq({ pool, workerId: "w", adaptive: true, banTtlMs: 60_000, policyVersion: (await store.listPolicies(pool)).version, ...over });
  const addProxies = (pool: string, n: number) =>
    store.addProxies(
      pool,
      Array.from({ length: n }, (_, i) => ({ id: `10.4.0.${i + 1}:3128`, url: `http://10.4.0.${i + 1}:3128`, tier: "", labels: {} })),
    );
  return { store, clock, params, addProxies, prefix };
}

/** Load leaseBatch on the server (its first call may go by EVAL after NOSCRIPT): two acquires of another domain. */
async function warmUp(store: RedisStore, p: AcquireParams): Promise<void> {
  await Promise.all([store.acquire({ ...p, domainKey: "warm.example" }), store.acquire({ ...p, domainKey: "warm.example" })]);
}

function granted(results: readonly AcquireResult[]) {
  return results.flatMap((r) => (r.kind === "granted" ? [r.lease] : []));
}

describe("RedisStore lease batches", () => {
  it("40 acquires in one turn on 30 proxies: one script call, 30 distinct proxies granted, 10 denied", async () => {
    const { store, params, addProxies } = await openStore();
    try {
      await addProxies("default", 30);
      const p = await params("default");
      await warmUp(store, p);
      await admin.config("RESETSTAT");
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => store.acquire({ ...p, workerId: `w${i}` })));
      expect(await scriptCalls()).toBe(2); // 32 + 8
      const leases = granted(results);
      expect(leases).toHaveLength(30);
      expect(new Set(leases.map((l) => l.proxy.id)).size).toBe(30);
      expect(results.filter((r) => r.kind === "denied")).toHaveLength(10);
      // tokens of one pair strictly increase inside a batch too
      await admin.config("RESETSTAT");
      const released = await Promise.all(
        leases.map((l) => store.release({ leaseId: l.leaseId, fencingToken: l.fencingToken, outcome: SUCCESS, next: p })),
      );
      expect(await scriptCalls()).toBe(1);
      expect(released.every((r) => r.kind === "released")).toBe(true);
      const again = released.flatMap((r) => (r.next?.kind === "granted" ? [r.next.lease] : []));
      expect(again).toHaveLength(30);
      const before = new Map(leases.map((l) => [l.proxy.id, l.fencingToken]));
      for (const l of again) expect(l.fencingToken).toBeGreaterThan(before.get(l.proxy.id) ?? Infinity);
      // retried releases in one batch: the same answers as alone
      const retried = await Promise.all([
        ...leases.slice(0, 5).map((l) => store.release({ leaseId: l.leaseId, fencingToken: l.fencingToken, outcome: SUCCESS })),
        ...leases.slice(0, 5).map((l) => store.release({ leaseId: l.leaseId, fencingToken: l.fencingToken + 1, outcome: SUCCESS })),
      ]);
      expect(retried.map((r) => (r.kind === "lost" ? r.reason : r.kind))).toEqual([
        ...Array(5).fill("released"),
        ...Array(5).fill("REVOKED"),
      ]);
    } finally {
      await store.close();
    }
  });

  it("one script call per pool of the turn; with maxBatch 1 one call per operation", async () => {
    const batched = await openStore();
    const alone = await openStore(1);
    try {
      for (const { addProxies } of [batched, alone]) {
        await addProxies("a", 5);
        await addProxies("b", 5);
      }
      const [pa, pb] = [await batched.params("a"), await batched.params("b")];
      await warmUp(batched.store, pa);
      await warmUp(batched.store, pb);
      await admin.config("RESETSTAT");
      const r = await Promise.all([
        ...Array.from({ length: 5 }, () => batched.store.acquire(pa)),
        ...Array.from({ length: 5 }, () => batched.store.acquire(pb)),
      ]);
      expect(await scriptCalls()).toBe(2);
      expect(granted(r)).toHaveLength(10);
      const [qa, qb] = [await alone.params("a"), await alone.params("b")];
      await warmUp(alone.store, qa);
      await admin.config("RESETSTAT");
      const s = await Promise.all([
        ...Array.from({ length: 5 }, () => alone.store.acquire(qa)),
        ...Array.from({ length: 5 }, () => alone.store.acquire(qb)),
      ]);
      expect(await scriptCalls()).toBe(10);
      expect(granted(s)).toHaveLength(10);
    } finally {
      await batched.store.close();
      await alone.store.close();
    }
  });

  it("an operation that fails answers its error alone; the others of its batch are answered", async () => {
    const { store, params, addProxies, prefix } = await openStore();
    const client = createRedisClient({ url: server.url });
    try {
      await addProxies("default", 3);
      const p = await params("default");
      const runner = new ScriptRunner(client, 2_000, scriptConstants(DEFAULT_SCORING));
      const batcher = new LeaseBatcher({ runner });
      const keys = new KeyBuilder(prefix).pool("default");
      const op = (i: number, ttl: string) => {
        const args = acquireArgs(keys, p, { hex: randomBytes(16).toString("hex"), seed: i });
        args[SCRIPT_ARGS.acquire.indexOf("ttlMs")] = ttl;
        const k = acquireKeys(keys, p);
        return { code: "A" as const, keys: k, args, now: String(Date.now()), alone: () => Promise.reject(new Error("not alone")) };
      };
      const answers = await Promise.allSettled([
        batcher.submit("default", op(1, "30000")),
        batcher.submit("default", op(2, "not a number")),
        batcher.submit("default", op(3, "30000")),
      ]);
      expect(answers.map((a) => a.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      const [first, failed, third] = answers;
      if (first?.status === "fulfilled" && third?.status === "fulfilled") {
        expect((first.value as unknown[])[0]).toBe(1);
        expect((third.value as unknown[])[0]).toBe(1);
        expect((first.value as unknown[])[4]).not.toBe((third.value as unknown[])[4]);
      }
      if (failed?.status === "rejected") expect(String(failed.reason)).toMatch(/arithmetic|number/);
    } finally {
      client.disconnect();
      await store.close();
    }
  });
});
