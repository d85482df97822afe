/**
 * A sharded pool when parts of it fail or disagree: brokers with another POOL_SHARDS, a shard
 * that cannot be written, a best-effort step that fails, event reads without a free connection.
 * A real redis-server; faults injected into calls of the inner Redis store.
 */
import { describe, expect, it } from "vitest";
import { policySpec, type AcquireParams } from "@proxybroker/sdk/model";
import { ShardLayoutError } from "../../../../src/store/sharded/layout.js";
import { ShardMap } from "../../../../src/store/sharded/shard-map.js";
import { withRedis } from "../../../support/with-redis.js";
import { openShards } from "../../../support/sharded-store.js";
import { acq, outcome, proxySpec } from "../../../sdk/engine/conformance/harness.js";

const redis = withRedis();
const SHARDS = new ShardMap({ all: 3, byPool: {} });
const specs = (n: number) => Array.from({ length: n }, (_, i) => proxySpec(i));

describe("ShardedStore layout", () => {
  it("a broker refuses a pool stored in another shard layout, so no proxy is stored (and leased) twice", async () => {
    const one = openShards(redis, { shards: 1 });
    const three = openShards(redis, { shards: 3, prefix: one.prefix });
    const two = openShards(redis, { shards: 2, prefix: one.prefix });
    // stored unsharded: a broker with shards refuses it, for reads and writes
    await one.store.addProxies("legacy", specs(4));
    await expect(three.store.listPolicies("legacy")).rejects.toThrow(ShardLayoutError);
    await expect(three.store.addProxies("legacy", specs(4))).rejects.toThrow(/stored unsharded/);
    await expect(three.store.removeProxies("legacy", [proxySpec(0).id])).rejects.toThrow(ShardLayoutError);
    // stored in 3 shards: brokers with 1 or 2 refuse it
    await three.store.addProxies("big", specs(9));
    await expect(one.store.listPolicies("big")).rejects.toThrow(/stored in 3 shards/);
    await expect(two.store.addProxies("big", specs(9))).rejects.toThrow(ShardLayoutError);
    await expect(one.store.setPolicy("big", policySpec({ pattern: "*" }))).rejects.toThrow(ShardLayoutError);
    // and the brokers that agree go on
    expect((await three.store.listPolicies("big")).proxies).toBe(9);
    expect((await one.store.listPolicies("legacy")).proxies).toBe(4);
  });

  it("a wipe right after a broker found the layout right, then an import through it, leaves the pool servable by every broker", async () => {
    const a = openShards(redis, { shards: 3 });
    await a.store.addProxies("big", specs(9));
    expect((await a.store.listPolicies("big")).proxies).toBe(9); // found right: not checked again for a while
    await redis.deleteKeys(`${a.prefix}*`); // the store lost the pool (FLUSHALL, a restart without its data)
    await a.store.addProxies("big", specs(9)); // PROXIES_FILE imported again after the loss
    // another broker, or this one restarted, serves the pool: it is stored in 3 shards
    const b = openShards(redis, { shards: 3, prefix: a.prefix });
    expect((await b.store.listPolicies("big")).proxies).toBe(9);
    await expect(openShards(redis, { shards: 1, prefix: a.prefix }).store.listPolicies("big")).rejects.toThrow(/stored in 3 shards/);
  });

  it("an unsharded broker that found a pool unsharded moments ago still refuses to add to it once it is sharded", async () => {
    const one = openShards(redis, { shards: 1 });
    const three = openShards(redis, { shards: 3, prefix: one.prefix });
    expect((await one.store.listPolicies("mixed")).proxies).toBe(0); // found unsharded (empty): not checked again for a while
    await three.store.addProxies("mixed", specs(9)); // records 3 shards
    await expect(one.store.addProxies("mixed", specs(9))).rejects.toThrow(/stored in 3 shards/);
    // nothing of it was written: each proxy is stored once, on its shard
    expect((await three.store.listPolicies("mixed")).proxies).toBe(9);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const page = await three.inner.listProxies(SHARDS.name("mixed", i), { size: 100, after: "" });
      ids.push(...page.proxies.map((p) => p.id));
    }
    expect(ids.sort()).toEqual(
      specs(9)
        .map((s) => s.id)
        .sort(),
    );
  });
});

describe("ShardedStore best-effort steps", () => {
  it("a RATE_LIMITED release whose spread to other shards fails still answers, with its next lease", async () => {
    const errors: string[] = [];
    const { store } = openShards(redis, { fail: (m) => m === "raisePacing", onError: (what) => errors.push(what) });
    await store.addProxies("default", specs(30));
    const p = acq({ adaptive: true, minIntervalMs: 400 });
    const first = await store.acquire(p);
    if (first.kind !== "granted") throw new Error("expected a grant");
    const r = await store.release({
      leaseId: first.lease.leaseId,
      fencingToken: first.lease.fencingToken,
      outcome: outcome("RATE_LIMITED"),
      next: p,
    });
    expect(r.kind).toBe("released");
    expect(r.next?.kind).toBe("granted");
    expect(errors).toEqual(["spreading the raised interval of shop.example.com in pool default"]);
  });

  it("a release-with-next across shards whose release fails gives the granted next lease back", async () => {
    // the release of this lease fails (its shard's master is away); the other shards answer
    let failLease = "";
    const errors: string[] = [];
    const { store } = openShards(redis, {
      fail: (m, args) => m === "release" && (args[0] as { leaseId?: unknown }).leaseId === failLease,
      onError: (what) => errors.push(what),
    });
    await store.addProxies("default", specs(30));
    // a lease on another shard than where the next acquire's domain-key starts
    const nextParams: AcquireParams = acq({ domainKey: "next.example" });
    const start = SHARDS.order("default", "next.example")[0];
    const elsewhere = specs(30).find((s) => SHARDS.shardOf("default", s.id) !== start)!.id;
    const held = await store.acquire(acq({ proxyId: elsewhere }));
    if (held.kind !== "granted") throw new Error("expected a grant");
    failLease = held.lease.leaseId;
    await expect(
      store.release({ leaseId: held.lease.leaseId, fencingToken: held.lease.fencingToken, outcome: outcome("SUCCESS"), next: nextParams }),
    ).rejects.toThrow(/injected/);
    failLease = "";
    // the next lease was granted and given back: every proxy is free for next.example
    await expect
      .poll(async () => {
        const got: string[] = [];
        for (let i = 0; i < 30; i++) {
          const r = await store.acquire(acq({ domainKey: "next.example", workerId: `probe-${Date.now()}-${i}` }));
          if (r.kind === "granted") {
            got.push(r.lease.proxy.id);
            await store.release({ leaseId: r.lease.leaseId, fencingToken: r.lease.fencingToken, outcome: outcome("ABANDONED") });
          }
        }
        return got.length;
      })
      .toBe(30);
    expect(errors).toEqual([]);
  });
});

describe("ShardedStore policies", () => {
  it("a policy write that fails on one shard fails; the next read copies the newest policies to it", async () => {
    let failShard2 = false;
    const { store } = openShards(redis, { fail: (m, args) => failShard2 && m === "setPolicy" && args[0] === "default~2" });
    await store.addProxies("default", specs(30));
    await store.setPolicy("default", policySpec({ pattern: "*", minIntervalMs: 1_000 }));
    const before = await store.listPolicies("default");
    failShard2 = true;
    await expect(store.setPolicy("default", policySpec({ pattern: "*", minIntervalMs: 5_000 }))).rejects.toThrow(/injected/);
    failShard2 = false;
    // shard 2 still has the old copy: the read takes the newest and repairs shard 2
    const after = await store.listPolicies("default");
    expect(after.policies.map((p) => p.minIntervalMs)).toEqual([5_000]);
    const parts = after.version.slice(after.version.lastIndexOf(".") + 1);
    expect(parts).not.toBe(before.version.slice(before.version.lastIndexOf(".") + 1));
    // every shard now answers stale to the version brokers held before the write
    const old = before.version;
    for (const id of [0, 1, 2].map((s) => specs(30).find((p) => SHARDS.shardOf("default", p.id) === s)!.id)) {
      expect((await store.acquire(acq({ proxyId: id, policyVersion: old }))).kind).toBe("stale-policy");
    }
    expect((await store.acquire(acq({ policyVersion: after.version, minIntervalMs: 5_000 }))).kind).toBe("granted");
  });
});

describe("ShardedStore events", () => {
  it("blocked reads that find no free connection wait out their rounds instead of spinning", async () => {
    let reads = 0;
    const { store } = openShards(redis, {
      fail: (m) => {
        if (m === "readEvents") reads++;
        return false;
      },
    });
    await store.addProxies("default", specs(9));
    // more blocked reads than the store has blocking connections (16) for 3 shards
    const started = Date.now();
    await Promise.all(Array.from({ length: 12 }, () => store.readEvents("default", "$", { count: 10, blockMs: 400 })));
    const ms = Date.now() - started;
    expect(ms).toBeGreaterThanOrEqual(390);
    // each read: a first round, then rounds of 50 ms on 3 shards: about 12 × 3 × 9; a spinning loop does thousands
    expect(reads).toBeLessThan(12 * 3 * 12);
  });
});
