/**
 * The local fallback pool: disjoint shares between workers, local exclusivity, pacing and
 * quarantine on a fake clock, outcome buffering, the snapshot file, and static lists.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  policySpec,
  type DomainPolicySpec,
  type OutcomeInput,
  type OutcomeKindName,
  type ProxyStateName,
  type ProxyView,
} from "@proxybroker/sdk/model";
import type { FallbackPool, FallbackPoolOptions } from "../../../sdk/src/fallback/fallback-pool.js";
import { loadSnapshotFile, saveSnapshotFile, type PoolSnapshot } from "../../../sdk/src/fallback/snapshot.js";
import { fakeClock, seededRandom, type FakeClock } from "../../support/fake-clock.js";
import { proxyView } from "../../support/proxy-view.js";
import { fallbackPoolOn, fallbackRequest } from "../../support/fallback-fixtures.js";

function proxy(i: number, state: ProxyStateName = "ACTIVE"): ProxyView {
  const id = `10.1.${i >> 8}.${i & 255}:3128`;
  return proxyView(id, {
    url: `http://user:pw@${id}`,
    tier: i % 2 === 0 ? "datacenter" : "residential",
    labels: { country: i % 3 === 0 ? "de" : "us" },
    score: 40 + (i % 50),
    state,
    latencyEwmaMs: 120,
    successCount: i,
  });
}

const policy = (p: Partial<DomainPolicySpec> & { pattern: string }): DomainPolicySpec => policySpec(p);

function snapshot(over: Partial<PoolSnapshot> = {}): PoolSnapshot {
  return {
    pool: "default",
    proxies: Array.from({ length: 40 }, (_, i) => proxy(i)),
    liveWorkers: ["A", "B"],
    policies: [],
    takenAt: 1_699_999_990_000,
    ...over,
  };
}

const outcome = (kind: OutcomeKindName): OutcomeInput => ({ kind, httpStatus: 0, latencyMs: 0, retryAfterMs: 0 });

const req = fallbackRequest;

let clock: FakeClock;
let dir: string;
const make = (o: Partial<FallbackPoolOptions> & { workerId: string }): FallbackPool => fallbackPoolOn(() => clock, o);

beforeEach(async () => {
  clock = fakeClock();
  dir = await mkdtemp(join(tmpdir(), "pb-fallback-"));
});
afterEach(async () => {
  vi.useRealTimers();
  await rm(dir, { recursive: true, force: true });
});

describe("two workers in fallback", () => {
  it("get disjoint shares that cover the ACTIVE proxies, and leave out the others", async () => {
    const proxies = [...Array.from({ length: 40 }, (_, i) => proxy(i)), proxy(100, "QUARANTINED"), proxy(101, "BLACKLISTED")];
    const a = make({ workerId: "A" });
    const b = make({ workerId: "B" });
    await a.useSnapshot(snapshot({ proxies }));
    await b.useSnapshot(snapshot({ proxies }));
    const both = [...a.share, ...b.share];
    expect(a.share.length).toBeGreaterThan(5);
    expect(b.share.length).toBeGreaterThan(5);
    expect(new Set(both).size).toBe(both.length);
    expect(new Set(both)).toEqual(new Set(proxies.filter((p) => p.state === "ACTIVE").map((p) => p.id)));
    expect(a.hasPool && b.hasPool).toBe(true);
  });

  it("never lease the same proxy, under many concurrent acquires on many domains", async () => {
    const a = make({ workerId: "A" });
    const b = make({ workerId: "B", random: seededRandom(8) });
    await Promise.all([a.useSnapshot(snapshot()), b.useSnapshot(snapshot())]);
    const used = { A: new Set<string>(), B: new Set<string>() };
    const domains = Array.from({ length: 25 }, (_, i) => `site${i}.example`);
    const run = async (pool: FallbackPool, name: "A" | "B"): Promise<number> => {
      let granted = 0;
      await Promise.all(
        Array.from({ length: 400 }, async (_, i) => {
          const r = await pool.acquire(req(domains[i % domains.length]!));
          if (r.kind !== "granted") return;
          granted++;
          used[name].add(r.lease.proxy.id);
          if (i % 3 === 0) await pool.release(r.lease.leaseId, r.lease.fencingToken, outcome("SUCCESS"));
        }),
      );
      return granted;
    };
    const [ga, gb] = await Promise.all([run(a, "A"), run(b, "B")]);
    expect(ga).toBeGreaterThan(100);
    expect(gb).toBeGreaterThan(100);
    for (const id of used.A) expect(used.B.has(id), `${id} leased by both`).toBe(false);
    expect(used.A.size + used.B.size).toBe(40);
  });
});

describe("local lease semantics", () => {
  const one = (o: Partial<PoolSnapshot> = {}): PoolSnapshot => snapshot({ proxies: [proxy(1)], liveWorkers: [], ...o });

  it("grants fb- leases marked as fallback, exclusive per domain-key, and renews and releases them", async () => {
    const p = make({ workerId: "A" });
    await p.useSnapshot(one());
    const first = await p.acquire(req("shop.example", { ttlMs: 10_000 }));
    if (first.kind !== "granted") throw new Error("expected a grant");
    expect(first.lease.leaseId.startsWith("fb-")).toBe(true);
    expect(first.lease.source).toBe("fallback");
    expect(first.lease.expireAt).toBe(clock.now() + 10_000);
    expect(await p.acquire(req("SHOP.example:443"))).toEqual({ kind: "denied", retryAfterMs: 10_000 });
    expect((await p.acquire(req("other.example"))).kind).toBe("granted");
    clock.advance(4_000);
    expect(await p.renew(first.lease.leaseId, first.lease.fencingToken, 0)).toEqual({
      kind: "renewed",
      expireAt: clock.now() + 10_000,
      ttlMs: 10_000,
    });
    expect(await p.renew(first.lease.leaseId.slice(3), first.lease.fencingToken, 0)).toEqual({ kind: "lost", reason: "NOT_FOUND" });
    expect(await p.release(first.lease.leaseId, first.lease.fencingToken, outcome("SUCCESS"))).toEqual({ kind: "released" });
    const again = await p.acquire(req("shop.example"));
    expect(again.kind === "granted" && again.lease.fencingToken).toBeGreaterThan(first.lease.fencingToken);
  });

  it("paces grants by the snapshot's min interval, per policy group", async () => {
    const policies = [policy({ pattern: "*.shop.example", group: "shop", minIntervalMs: 5_000 })];
    const p = make({ workerId: "A" });
    await p.useSnapshot(one({ policies }));
    const g = await p.acquire(req("a.shop.example"));
    if (g.kind !== "granted") throw new Error("expected a grant");
    expect(g.lease.domainKey).toBe("shop");
    await p.release(g.lease.leaseId, g.lease.fencingToken, outcome("SUCCESS"));
    clock.advance(1_000);
    expect(await p.acquire(req("b.shop.example"))).toEqual({ kind: "denied", retryAfterMs: 4_000 });
    clock.advance(4_000);
    expect((await p.acquire(req("b.shop.example"))).kind).toBe("granted");
  });

  it("says a pair was used lately while its lease lives and for its interval after the lease ended (a broker grant of it would come too early)", async () => {
    const policies = [policy({ pattern: "shop.example", minIntervalMs: 300 })];
    const p = make({ workerId: "A" });
    await p.useSnapshot(one({ policies }));
    const g = await p.acquire(req("shop.example", { ttlMs: 10_000 }));
    if (g.kind !== "granted") throw new Error("expected a grant");
    const id = g.lease.proxy.id;
    expect(p.usedLately(id, "shop.example", clock.now())).toBe(true);
    expect(p.usedLately(id, "other.example", clock.now())).toBe(false);
    clock.advance(2_000);
    await p.release(g.lease.leaseId, g.lease.fencingToken, outcome("SUCCESS"));
    clock.advance(299);
    expect(p.usedLately(id, "shop.example", clock.now())).toBe(true);
    clock.advance(1);
    expect(p.usedLately(id, "shop.example", clock.now())).toBe(false);
  });

  it("quarantines a proxy after PROXY_ERROR outcomes and returns it after the quarantine", async () => {
    const p = make({ workerId: "A" });
    await p.useSnapshot(one());
    for (let i = 0; i < 3; i++) {
      const g = await p.acquire(req(`d${i}.example`));
      if (g.kind !== "granted") throw new Error(`expected grant ${i}`);
      await p.release(g.lease.leaseId, g.lease.fencingToken, outcome("PROXY_ERROR"));
    }
    const denied = await p.acquire(req("fresh.example"));
    if (denied.kind !== "denied") throw new Error("expected a denial while quarantined");
    expect(denied.retryAfterMs).toBeGreaterThanOrEqual(540_000); // 600 s ± 10 % jitter
    expect(denied.retryAfterMs).toBeLessThanOrEqual(660_000);
    clock.advance(denied.retryAfterMs);
    const back = await p.acquire(req("fresh.example"));
    expect(back.kind === "granted" && back.lease.proxy.score).toBe(30);
  });

  it("keeps leases granted before a rebuild exclusive and renewable", async () => {
    const p = make({ workerId: "A" });
    await p.useSnapshot(snapshot({ liveWorkers: [] }));
    const held = await Promise.all(p.share.map(() => p.acquire(req("x.example", { ttlMs: 60_000 }))));
    expect(held.every((r) => r.kind === "granted")).toBe(true);
    await p.useSnapshot(snapshot({ liveWorkers: ["B", "C"], takenAt: clock.now() }));
    expect(p.share.length).toBeLessThan(40);
    expect(await p.acquire(req("x.example"))).toMatchObject({ kind: "denied" });
    for (const r of held) {
      if (r.kind !== "granted") continue;
      expect((await p.renew(r.lease.leaseId, r.lease.fencingToken, 0)).kind).toBe("renewed");
      expect((await p.release(r.lease.leaseId, r.lease.fencingToken, outcome("SUCCESS"))).kind).toBe("released");
    }
    const after = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const r = await p.acquire(req("x.example", { ttlMs: 60_000 }));
      if (r.kind === "granted") after.add(r.lease.proxy.id);
    }
    expect([...after].sort()).toEqual([...p.share]);
  });

  it("waits locally: a release wakes a waiter, and the wait ends in a denial at max wait", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const p = make({ workerId: "A" });
    await p.useSnapshot(one());
    const g = await p.acquire(req("w.example", { ttlMs: 60_000 }));
    if (g.kind !== "granted") throw new Error("expected a grant");
    const waiting = p.acquire(req("w.example", { maxWaitMs: 5_000 }));
    await vi.advanceTimersByTimeAsync(0);
    await p.release(g.lease.leaseId, g.lease.fencingToken, outcome("SUCCESS"));
    expect((await waiting).kind).toBe("granted");

    const hopeless = p.acquire(req("w.example", { maxWaitMs: 1_000 }));
    let done = false;
    void hopeless.then(() => (done = true));
    for (let i = 0; i < 10; i++) {
      clock.advance(50);
      await vi.advanceTimersByTimeAsync(50);
    }
    expect(done).toBe(false);
    for (let i = 0; i < 11; i++) {
      clock.advance(50);
      await vi.advanceTimersByTimeAsync(50);
    }
    expect(await hopeless).toMatchObject({ kind: "denied" });
  });

  it("denies a pool it does not serve, and everything before any pool", async () => {
    const p = make({ workerId: "A" });
    expect(p.hasPool).toBe(false);
    expect(await p.acquire(req("x.example"))).toEqual({ kind: "denied", retryAfterMs: -1 });
    await p.useSnapshot(one());
    expect(await p.acquire(req("x.example", { pool: "other" }))).toEqual({ kind: "denied", retryAfterMs: -1 });
    expect((await p.acquire(req("x.example", { pool: "" }))).kind).toBe("granted");
  });
});

describe("outcome buffer", () => {
  it("buffers each applied outcome once with its proxy, domain-key and worker, and drains them", async () => {
    const p = make({ workerId: "A" });
    await p.useSnapshot(snapshot({ liveWorkers: [], policies: [policy({ pattern: "*.g.example", group: "g" })] }));
    const g = await p.acquire(req("a.g.example"));
    if (g.kind !== "granted") throw new Error("expected a grant");
    clock.advance(10);
    await p.release(g.lease.leaseId, g.lease.fencingToken, outcome("BLOCKED"));
    await p.release(g.lease.leaseId, g.lease.fencingToken, outcome("BLOCKED")); // idempotent retry
    await p.release(g.lease.leaseId, g.lease.fencingToken + 1, outcome("SUCCESS")); // wrong token
    expect(p.bufferedOutcomes).toBe(1);
    expect(p.drainOutcomes()).toEqual([
      { pool: "default", proxyId: g.lease.proxy.id, domainKey: "g", outcome: outcome("BLOCKED"), observedAt: clock.now(), workerId: "A" },
    ]);
    expect(p.bufferedOutcomes).toBe(0);
    expect(p.drainOutcomes()).toEqual([]);
  });

  it("is bounded: the oldest outcomes are dropped and counted; ABANDONED is not kept", async () => {
    const p = make({ workerId: "A", maxBufferedOutcomes: 2 });
    await p.useSnapshot(snapshot({ liveWorkers: [] }));
    const kinds: OutcomeKindName[] = ["SUCCESS", "TARGET_ERROR", "RATE_LIMITED", "ABANDONED", "BLOCKED"];
    for (const [i, kind] of kinds.entries()) {
      const g = await p.acquire(req(`d${i}.example`));
      if (g.kind !== "granted") throw new Error("expected a grant");
      await p.release(g.lease.leaseId, g.lease.fencingToken, outcome(kind));
    }
    expect(p.bufferedOutcomes).toBe(2);
    expect(p.droppedOutcomes).toBe(2);
    expect(p.drainOutcomes().map((o) => o.outcome.kind)).toEqual(["RATE_LIMITED", "BLOCKED"]);
  });
});

describe("snapshot file", () => {
  it("round-trips, and a missing, corrupt or foreign file is ignored", async () => {
    const file = join(dir, "sub", "pool.json");
    const expectations = { blockMarkers: ["denied"], requiredMarkers: ["#product"], minBytes: 10, slowDownPatterns: [] };
    const snap = snapshot({ policies: [policy({ pattern: "*", minIntervalMs: 100 }), policy({ pattern: "shop.example", expectations })] });
    expect(await loadSnapshotFile(file)).toBeUndefined();
    await saveSnapshotFile(file, snap);
    expect(await loadSnapshotFile(file)).toEqual(snap);
    expect((await stat(file)).mode & 0o777).toBe(0o600); // proxy URLs may carry credentials
    await writeFile(file, '{"version":1,"snapshot":{"pool":"default","proxi');
    expect(await loadSnapshotFile(file)).toBeUndefined();
    await writeFile(file, JSON.stringify({ version: 1, snapshot: { ...snap, proxies: [{ id: 5 }] } }));
    expect(await loadSnapshotFile(file)).toBeUndefined();
    await writeFile(file, JSON.stringify({ version: 99, snapshot: snap }));
    expect(await loadSnapshotFile(file)).toBeUndefined();
  });

  it("lets a worker that starts during an outage rebuild the same share from the file", async () => {
    const file = join(dir, "pool.json");
    const before = make({ workerId: "B", snapshotFile: file });
    await before.useSnapshot(snapshot({ liveWorkers: ["A", "B", "C"] }));
    expect(JSON.parse(await readFile(file, "utf8")).snapshot.liveWorkers).toEqual(["A", "B", "C"]);
    const restarted = make({ workerId: "B", snapshotFile: file });
    expect(restarted.hasPool).toBe(false);
    expect(await restarted.loadFromFile()).toBe(true);
    expect(restarted.share).toEqual(before.share);
    expect(restarted.share.length).toBeLessThan(30);
    expect((await restarted.acquire(req("x.example"))).kind).toBe("granted");
  });

  it("reports a failed write with its code, the new pool being in use already", async () => {
    await writeFile(join(dir, "blocker"), "a file, not a directory");
    const p = make({ workerId: "A", snapshotFile: join(dir, "blocker", "pool.json") });
    await expect(p.useSnapshot(snapshot({ liveWorkers: [] }))).rejects.toMatchObject({ code: "SNAPSHOT_WRITE_FAILED" });
    expect(p.share.length).toBe(40);
  });

  it("loads nothing from a corrupt file and keeps a newer snapshot over an older file", async () => {
    const file = join(dir, "pool.json");
    await writeFile(file, "not json");
    const p = make({ workerId: "A", snapshotFile: file });
    expect(await p.loadFromFile()).toBe(false);
    expect(p.hasPool).toBe(false);
    await saveSnapshotFile(file, snapshot({ takenAt: 1 }));
    await p.useSnapshot(snapshot({ takenAt: 2, liveWorkers: [] }));
    expect(await p.loadFromFile()).toBe(false);
    expect(p.share.length).toBe(40);
  });
});

describe("static proxies", () => {
  const specs = Array.from({ length: 12 }, (_, i) => {
    const { id, url, tier, labels } = proxy(i);
    return { id, url, tier, labels };
  });

  it("serve without any snapshot, the whole list for a lone worker", async () => {
    const p = make({ workerId: "A", staticProxies: specs });
    const g = await p.acquire(req("x.example", { tier: "datacenter", labels: { country: "de" } }));
    if (g.kind !== "granted") throw new Error("expected a grant");
    expect(g.lease.proxy.tier).toBe("datacenter");
    expect(g.lease.proxy.labels["country"]).toBe("de");
    expect([...p.share]).toEqual(specs.map((s) => s.id).sort());
    expect(p.hasPool).toBe(true);
  });

  it("split without overlap over staticWorkers", async () => {
    const a = make({ workerId: "A", staticProxies: specs, staticWorkers: ["A", "B"] });
    const b = make({ workerId: "B", staticProxies: specs, staticWorkers: ["A"] });
    await Promise.all([a.acquire(req("warm.example")), b.acquire(req("warm.example"))]);
    expect(a.share.length + b.share.length).toBe(12);
    expect(a.share.filter((id) => b.share.includes(id))).toEqual([]);
  });
});
