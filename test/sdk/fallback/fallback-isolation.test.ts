/**
 * Isolation groups (G8) in the fallback pool: one worker's fallback leases never put one proxy on
 * two domain-keys of a group at once, whichever store serves them; shares are cut by share key;
 * and a group's affinity window counts at the switch to fallback and back.
 */
import { describe, expect, it } from "vitest";
import { policySpec, type DomainPolicySpec, type OutcomeInput, type ProxyView } from "@proxybroker/sdk/model";
import type { DomainListing } from "../../../sdk/src/fallback/domain-shares.js";
import { FallbackPool, type FallbackAcquireRequest, type FallbackLease } from "../../../sdk/src/fallback/fallback-pool.js";
import type { PoolSnapshot } from "../../../sdk/src/fallback/snapshot.js";
import { fakeClock, seededRandom, type FakeClock } from "../../support/fake-clock.js";
import { proxyView } from "../../support/proxy-view.js";

function proxy(i: number): ProxyView {
  return proxyView(`10.2.0.${i}:3128`);
}

/** a.example and b.example share anti-fraud data (isolation group "fraud"); c.example does not. */
const grouped = (affinityWindowMs = 0): DomainPolicySpec[] => [
  policySpec({ pattern: "a.example", isolationGroup: "fraud", ...(affinityWindowMs > 0 ? { affinityWindowMs } : {}) }),
  policySpec({ pattern: "b.example", isolationGroup: "fraud" }),
];

function snapshot(clock: FakeClock, over: Partial<PoolSnapshot> = {}): PoolSnapshot {
  return {
    pool: "default",
    proxies: [1, 2, 3].map(proxy),
    liveWorkers: [],
    policies: grouped(),
    takenAt: clock.now(),
    ...over,
  };
}

const req = (host: string): FallbackAcquireRequest => ({
  pool: "default",
  host,
  ttlMs: 0,
  sessionKey: "",
  tier: "",
  labels: {},
  maxWaitMs: 0,
});
const success: OutcomeInput = { kind: "SUCCESS", httpStatus: 200, latencyMs: 10, retryAfterMs: 0 };
const listing = (domainKey: string): DomainListing => ({ domainKey, listedForMs: 0, expiresInMs: 600_000 });

async function granted(pool: FallbackPool, host: string): Promise<FallbackLease> {
  const r = await pool.acquire(req(host));
  if (r.kind !== "granted") throw new Error(`${host}: denied (${JSON.stringify(r)})`);
  return r.lease;
}

/**
 * A pool of worker `self` whose lists have named it long enough (6 s) with its domain-keys, and
 * whose claim of them the broker acknowledged.
 */
async function established(clock: FakeClock, self: string, domains: Record<string, DomainListing[]>, over: Partial<PoolSnapshot> = {}) {
  const pool = new FallbackPool({ workerId: self, clock: () => clock.now(), random: seededRandom(3) });
  await pool.useSnapshot(snapshot(clock, { liveWorkers: Object.keys(domains).sort(), domains, ...over }));
  clock.advance(6_000);
  await pool.useMembership({ workers: Object.keys(domains).sort(), domains });
  const candidate = pool.claimCandidate(true);
  if (candidate === undefined) throw new Error("no claim: the lists carry no domain-keys");
  await pool.useClaim({ version: 1, ...candidate });
  return pool;
}

/**
 * Random acquires and releases of both keys of the group (and of a third key) on one pool: at no
 * moment does a proxy hold live leases for both a.example and b.example.
 */
async function neverTwoKeysOfTheGroup(pool: FallbackPool, clock: FakeClock): Promise<{ a: number; b: number }> {
  const random = seededRandom(11);
  const live: FallbackLease[] = [];
  const grants = { a: 0, b: 0 };
  for (let i = 0; i < 300; i++) {
    const host = random() < 0.45 ? "a.example" : random() < 0.8 ? "b.example" : "c.example";
    const r = await pool.acquire(req(host));
    if (r.kind === "granted") {
      const other = host === "a.example" ? "b.example" : "a.example";
      if (host !== "c.example") {
        const clash = live.find((l) => l.proxy.id === r.lease.proxy.id && l.domainKey === other);
        expect(clash, `${r.lease.proxy.id} leased for ${host} while live for ${other}`).toBeUndefined();
        grants[host === "a.example" ? "a" : "b"]++;
      }
      live.push(r.lease);
    }
    if (live.length > 0 && random() < 0.5) {
      const [l] = live.splice(Math.floor(random() * live.length), 1);
      await pool.release(l!.leaseId, l!.fencingToken, success);
    }
    clock.advance(10);
  }
  return grants;
}

describe("one worker's fallback pool and an isolation group", () => {
  it("never gives one proxy to two domain-keys of the group at once (its share)", async () => {
    const clock = fakeClock();
    const pool = new FallbackPool({ workerId: "A", clock: () => clock.now(), random: seededRandom(5) });
    await pool.useSnapshot(snapshot(clock));
    expect(pool.routeOf("a.example")).toBe("share");
    const held = [await granted(pool, "a.example"), await granted(pool, "a.example"), await granted(pool, "a.example")];
    expect(new Set(held.map((l) => l.proxy.id)).size).toBe(3);
    // every proxy is on a.example now: none for b.example, while c.example is not in the group
    expect((await pool.acquire(req("b.example"))).kind).toBe("denied");
    expect((await granted(pool, "c.example")).domainKey).toBe("c.example");
    // a proxy released by a.example may go to b.example (no affinity window)
    await pool.release(held[1]!.leaseId, held[1]!.fencingToken, success);
    expect((await granted(pool, "b.example")).proxy.id).toBe(held[1]!.proxy.id);

    const fresh = new FallbackPool({ workerId: "A", clock: () => clock.now(), random: seededRandom(5) });
    await fresh.useSnapshot(snapshot(clock));
    const grants = await neverTwoKeysOfTheGroup(fresh, clock);
    expect(grants.a).toBeGreaterThan(20);
    expect(grants.b).toBeGreaterThan(20);
  });

  it("never gives one proxy to two domain-keys of the group at once (every proxy, alone on the group)", async () => {
    const clock = fakeClock();
    const pool = await established(clock, "A", { A: [listing("a.example"), listing("b.example")], B: [listing("other.example")] });
    expect(pool.routeOf("a.example")).toBe("sole");
    expect(pool.routeOf("b.example")).toBe("sole");
    const grants = await neverTwoKeysOfTheGroup(pool, clock);
    expect(grants.a).toBeGreaterThan(20);
    expect(grants.b).toBeGreaterThan(20);
  });

  it("is not alone on a key while another worker is listed with another key of its group: its grants stay in its share", async () => {
    const clock = fakeClock();
    const proxies = Array.from({ length: 12 }, (_, i) => proxy(i + 1));
    const domains = { A: [listing("a.example")], B: [listing("b.example")] };
    const a = await established(clock, "A", domains, { proxies });
    const b = await established(clock, "B", domains, { proxies });
    expect(a.routeOf("a.example")).toBe("share");
    expect(b.routeOf("b.example")).toBe("share");
    expect(a.share.filter((id) => b.share.includes(id))).toEqual([]);
    const got = new Set<string>();
    for (let r = await a.acquire(req("a.example")); r.kind === "granted"; r = await a.acquire(req("a.example"))) got.add(r.lease.proxy.id);
    expect([...got].sort()).toEqual([...a.share]);
    // the same lists without the group: A would take every proxy for a.example, B for b.example
    const ungrouped = await established(clock, "A", domains, { proxies, policies: [] });
    expect(ungrouped.routeOf("a.example")).toBe("sole");
  });
});

describe("the affinity window of an isolation group", () => {
  it("holds a grouped domain-key for the window after entering fallback (another worker's lease may have been on another key)", async () => {
    const clock = fakeClock();
    const pool = new FallbackPool({ workerId: "A", clock: () => clock.now(), random: seededRandom(5) });
    await pool.useSnapshot(snapshot(clock, { policies: grouped(5_000) }));
    pool.enter(clock.now());
    const r = await pool.acquire(req("a.example"));
    expect(r).toMatchObject({ kind: "denied", held: true, retryAfterMs: 5_000 });
    // b.example's policy names no window, but its group's window is the longest of its policies'
    expect(await pool.acquire(req("b.example"))).toMatchObject({ kind: "denied", held: true, retryAfterMs: 5_000 });
    expect(await pool.acquire(req("c.example"))).toMatchObject({ kind: "denied", held: true, retryAfterMs: 250 });
    clock.advance(250);
    expect((await pool.acquire(req("c.example"))).kind).toBe("granted");
    clock.advance(4_749);
    expect((await pool.acquire(req("a.example"))).kind).toBe("denied");
    clock.advance(1);
    expect((await pool.acquire(req("a.example"))).kind).toBe("granted");
  });

  it("keeps a proxy off the group's other keys for the window after a local lease ended, and counts it as paced going back to the broker", async () => {
    const clock = fakeClock();
    const pool = new FallbackPool({ workerId: "A", clock: () => clock.now(), random: seededRandom(5) });
    await pool.useSnapshot(snapshot(clock, { proxies: [proxy(1)], policies: grouped(5_000) }));
    const lease = await granted(pool, "a.example");
    await pool.release(lease.leaseId, lease.fencingToken, success);
    const ended = clock.now();
    expect((await pool.acquire(req("b.example"))).kind).toBe("denied");
    // the pair's interval is 0, but the broker must hold the proxy for a.example in the group too
    expect(pool.pacedPairs(clock.now())).toEqual([
      { proxyId: proxy(1).id, host: "a.example", domainKey: "a.example", endedAt: ended, intervalMs: 0 },
    ]);
    expect(pool.quiet(clock.now())).toBe(false);
    clock.advance(5_000);
    expect(pool.pacedPairs(clock.now())).toEqual([]);
    expect(pool.quiet(clock.now())).toBe(true);
    expect((await granted(pool, "b.example")).proxy.id).toBe(proxy(1).id);
  });
});
