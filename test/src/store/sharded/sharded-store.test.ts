/**
 * What a sharded pool does beyond the conformance suite (docs/sharding.md): where proxies and
 * acquires go, what holds per shard, and how pool-wide answers are made of the shards'. A real
 * redis-server; a fake clock; 3 shards per pool.
 */
import { describe, expect, it } from "vitest";
import type { PoolEvent } from "@proxybroker/sdk/model";
import type { ShardedStore } from "../../../../src/store/sharded/sharded-store.js";
import { ShardMap } from "../../../../src/store/sharded/shard-map.js";
import { openShards, type OpenedShards } from "../../../support/sharded-store.js";
import { withRedis } from "../../../support/with-redis.js";
import { acq, outcome, proxySpec, TTL } from "../../../sdk/engine/conformance/harness.js";

const redis = withRedis();

const SHARDS = new ShardMap({ all: 3, byPool: {} });

/** A store of 3 shards per pool with `n` proxies in pool "default". */
async function open(n: number): Promise<OpenedShards> {
  const opened = openShards(redis);
  await opened.store.addProxies(
    "default",
    Array.from({ length: n }, (_, i) => proxySpec(i)),
  );
  return opened;
}

/** The ids of `n` test proxies on shard `shard`. */
function idsOn(n: number, shard: number): string[] {
  return Array.from({ length: n }, (_, i) => proxySpec(i).id).filter((id) => SHARDS.shardOf("default", id) === shard);
}

async function granted(store: ShardedStore, params = acq()) {
  const r = await store.acquire(params);
  if (r.kind !== "granted") throw new Error(`expected a grant, got ${JSON.stringify(r)}`);
  return r.lease;
}

describe("ShardedStore", () => {
  it("a renewal asks for the isolation group of the lease's key in the pool, not in its shard", async () => {
    const { store } = await open(30);
    const asked: string[] = [];
    for (let i = 0; i < 6; i++) {
      const lease = await granted(store, acq({ domainKey: `k${i}.example` }));
      const r = await store.renew({
        leaseId: lease.leaseId,
        fencingToken: lease.fencingToken,
        ttlMs: 0,
        isolationOf: (pool, domainKey) => {
          asked.push(`${pool} ${domainKey}`);
          return { group: "", affinityMs: 0 };
        },
      });
      expect(r.kind).toBe("renewed");
    }
    expect(asked).toEqual(Array.from({ length: 6 }, (_, i) => `default k${i}.example`));
  });

  it("keeps each proxy under the hash tag of its shard; a lease names the pool", async () => {
    const { store, prefix } = await open(30);
    for (let s = 0; s < 3; s++) {
      const ids = idsOn(30, s);
      expect(ids.length).toBeGreaterThan(3);
      const tag = s === 0 ? "{default}" : `{default~${s}}`;
      for (const id of ids) expect(await redis.admin().exists(`${prefix}${tag}:p:${id}`)).toBe(1);
    }
    const lease = await granted(store);
    expect(lease.pool).toBe("default");
  });

  it("an acquire starts on its domain-key's first shard and moves on only when that one has nothing eligible", async () => {
    const { store } = await open(30);
    const order = SHARDS.order("default", "shop.example.com");
    const got: number[] = [];
    for (let i = 0; i < 30; i++) got.push(SHARDS.shardOf("default", (await granted(store)).proxy.id));
    // the first shard's proxies, then the second's, then the third's
    const expected = order.flatMap((s) => idsOn(30, s).map(() => s));
    expect(got).toEqual(expected);
    // every shard busy: denied with the earliest moment any of them frees
    const r = await store.acquire(acq());
    expect(r).toEqual({ kind: "denied", retryAfterMs: TTL });
  });

  it("a release with next on the lease's shard is one script call; the answers name the pool", async () => {
    const { store } = await open(30);
    const lease = await granted(store);
    await redis.admin().config("RESETSTAT");
    const r = await store.release({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: outcome("SUCCESS"), next: acq() });
    const stats = await redis.admin().info("commandstats");
    const calls = (cmd: string) => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    // EVAL the first time a connection runs a script, EVALSHA after
    expect(calls("evalsha") + calls("eval")).toBe(1);
    expect(r.kind).toBe("released");
    expect(r.next?.kind === "granted" && r.next.lease.pool).toBe("default");
  });

  it("losing one shard's state holds grants on that shard only", async () => {
    const { store, prefix } = await open(30);
    const before = await store.listPolicies("default");
    await store.ensureEpoch("default", { expected: before.epoch, holdMs: 0, lost: false });
    const known = await store.listPolicies("default");
    expect(known.epoch.split("+")).toHaveLength(3);
    // shard 1's keys are gone (a master that failed over to a replica that missed them)
    const keys = await redis.admin().keys(`${prefix}{default~1}:*`);
    await redis.admin().del(...keys);
    await store.addProxies(
      "default",
      Array.from({ length: 30 }, (_, i) => proxySpec(i)).filter((p) => SHARDS.shardOf("default", p.id) === 1),
    );
    const after = await store.listPolicies("default");
    expect(after.epoch).toBe("");
    await store.ensureEpoch("default", { expected: known.epoch, holdMs: 30_000, lost: false });
    const version = (await store.listPolicies("default")).version;
    const on1 = idsOn(30, 1)[0] ?? "";
    const on0 = idsOn(30, 0)[0] ?? "";
    expect(await store.acquire(acq({ proxyId: on1, policyVersion: version }))).toEqual({ kind: "denied", retryAfterMs: 30_000 });
    expect((await granted(store, acq({ proxyId: on0, policyVersion: version }))).proxy.id).toBe(on0);
  });

  it("a RATE_LIMITED raises the domain-key's interval on every shard; a success lowers only its own", async () => {
    const { store, inner, clock } = await open(30);
    const p = acq({ adaptive: true, minIntervalMs: 400 });
    const lease = await granted(store, p);
    const from = SHARDS.shardOf("default", lease.proxy.id);
    await store.release({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: outcome("RATE_LIMITED") });
    const per = async () =>
      Promise.all(SHARDS.names("default").map(async (name) => (await inner.domainPacing(name, ["shop.example.com"], 1))[0]?.adaptiveMs));
    expect(await per()).toEqual([800, 800, 800]);
    // a success of a lease granted at 800 lowers its own shard's interval only
    clock.advance(10_000);
    const again = await granted(store, acq({ adaptive: true, minIntervalMs: 400, proxyId: lease.proxy.id }));
    await store.release({ leaseId: again.leaseId, fencingToken: again.fencingToken, outcome: outcome("SUCCESS") });
    const lowered = await per();
    expect(lowered[from]).toBeLessThan(800);
    expect(lowered.filter((a) => a === 800)).toHaveLength(2);
    // the pool's view is the slowest shard's
    expect((await store.domainPacing("default", ["shop.example.com"], 1))[0]?.adaptiveMs).toBe(800);
  });

  it("events of every shard come once each, in order per shard; a blocked read wakes for an event on any shard", async () => {
    const { store } = await open(30);
    const ids = [0, 1, 2].map((s) => idsOn(30, s)[0] ?? "");
    for (const id of ids) {
      const l = await granted(store, acq({ proxyId: id }));
      await store.release({ leaseId: l.leaseId, fencingToken: l.fencingToken, outcome: outcome("BLOCKED") });
      await store.appendEvent("default", { kind: "ADMIN", proxyId: id, domainKey: "", detail: "seen" });
    }
    // read two at a time: every event once, each cursor reads on
    const seen: PoolEvent[] = [];
    let cursor = "";
    for (let i = 0; i < 10; i++) {
      const r = await store.readEvents("default", cursor, { count: 2, blockMs: 0 });
      seen.push(...r.events);
      if (r.events.length > 0) expect(r.cursor).toBe(r.events.at(-1)?.id);
      cursor = r.cursor;
    }
    expect(seen.map((e) => `${e.kind} ${e.proxyId}`).sort()).toEqual(ids.flatMap((id) => [`ADMIN ${id}`, `BAN ${id}`]).sort());
    expect(new Set(seen.map((e) => e.id)).size).toBe(6);
    // a ban on shard 2 ends a read blocked on all of them
    const waiting = store.readEvents("default", cursor, { count: 10, blockMs: 5_000 });
    await new Promise((r) => setTimeout(r, 30));
    const l = await granted(store, acq({ proxyId: ids[2] ?? "", domainKey: "other.example" }));
    await store.release({ leaseId: l.leaseId, fencingToken: l.fencingToken, outcome: outcome("BLOCKED") });
    const woke = await waiting;
    expect(woke.events.map((e) => [e.kind, e.proxyId, e.domainKey])).toEqual([["BAN", ids[2], "other.example"]]);
  });

  it("lists every proxy of every shard once, in id order, page by page", async () => {
    const { store } = await open(25);
    const listed: string[] = [];
    let after = "";
    for (let i = 0; i < 20; i++) {
      const page = await store.listProxies("default", { size: 4, after });
      listed.push(...page.proxies.map((p) => p.id));
      if (page.next === "") break;
      after = page.next;
    }
    const all = Array.from({ length: 25 }, (_, i) => proxySpec(i).id).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(listed).toEqual(all);
    expect((await store.poolStats("default", 0)).total).toBe(25);
    expect((await store.listPolicies("default")).proxies).toBe(25);
  });

  it("a sticky session stays on the first shard of its key's order", async () => {
    const { store } = await open(30);
    const home = SHARDS.order("default", "s\x1fcart-7")[0];
    for (let i = 0; i < 5; i++) {
      const l = await granted(store, acq({ sessionKey: "cart-7", domainKey: `d${i}.example` }));
      expect(SHARDS.shardOf("default", l.proxy.id)).toBe(home);
      await store.release({ leaseId: l.leaseId, fencingToken: l.fencingToken, outcome: outcome("SUCCESS") });
    }
  });
});
