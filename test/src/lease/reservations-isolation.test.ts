/**
 * Reservations and isolation groups (G8): a silent worker's fallback share is reserved by share
 * key — `#<group>` for the domain-keys of an isolation group — as its fallback pool cut it, so
 * that nobody else gets its proxies for any key of the group while it may use them for one.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "@proxybroker/sdk/engine";
import { DEFAULT_SCORING, policySpec, shareOf } from "@proxybroker/sdk/model";
import type { AcquireParams, DomainPolicySpec } from "@proxybroker/sdk/model";
import { Reservations, type ReservedSummary } from "../../../src/lease/reservations.js";
import { shareKeyOf } from "@proxybroker/sdk/model";
import { acq } from "../../sdk/engine/conformance/harness.js";
import { fakeClock, type FakeClock } from "../../support/fake-clock.js";

const POOL = "default";
const PROXIES = Array.from({ length: 12 }, (_, i) => `10.9.0.${i + 1}:3128`);
const ABSENT_MS = 8_000;
const USE_MS = 600_000;
/** shop-a.example and shop-b.example share anti-fraud data. */
const GROUPED: readonly DomainPolicySpec[] = [
  policySpec({ pattern: "shop-a.example", isolationGroup: "fraud" }),
  policySpec({ pattern: "shop-b.example", isolationGroup: "fraud" }),
];

async function setup() {
  const clock = fakeClock();
  const store = new MemoryStore({ scoring: DEFAULT_SCORING, clock: () => clock.now() });
  await store.addProxies(
    POOL,
    PROXIES.map((id) => ({ id, url: `http://${id}`, tier: "", labels: {} })),
  );
  const reserved: ReservedSummary[] = [];
  const reservations = (mapped = true) =>
    new Reservations({
      store,
      pools: () => [POOL],
      clock: () => clock.now(),
      absentAfterMs: ABSENT_MS,
      fallbackWindowMs: 600_000,
      liveWindowMs: 60_000,
      intervalMs: 1_000,
      domainUses: (pool) => store.domainUses(pool, clock.now() - USE_MS),
      domainUseMs: USE_MS,
      onReserved: (_, r) => reserved.push(r),
      ...(mapped ? { shareKey: shareKeyOf } : {}),
    });
  return { clock, store, reserved, reservations };
}

/** An acquire of `host` as the broker resolves it under the store's current policies. */
async function acquireFor(store: MemoryStore, workerId: string, host: string, over: Partial<AcquireParams> = {}): Promise<AcquireParams> {
  const set = await store.listPolicies(POOL);
  const group = set.policies.find((p) => p.pattern === host)?.isolationGroup ?? "";
  return acq({
    pool: POOL,
    workerId,
    domainKey: host,
    policyVersion: set.version,
    fallbackPool: true,
    domainUseMs: USE_MS,
    ...(group === "" ? {} : { isolation: { group, affinityMs: 0, formerGroups: [] } }),
    ...over,
  });
}

/** Workers lease their domain-keys (recorded as their uses), then release them. */
async function use(store: MemoryStore, byWorker: Record<string, string[]>): Promise<void> {
  for (const [workerId, hosts] of Object.entries(byWorker)) {
    for (const host of hosts) {
      const r = await store.acquire(await acquireFor(store, workerId, host));
      if (r.kind !== "granted") throw new Error(`${workerId} ${host}: ${r.kind}`);
      await store.release({
        leaseId: r.lease.leaseId,
        fencingToken: r.lease.fencingToken,
        outcome: { kind: "ABANDONED", httpStatus: 0, latencyMs: 0, retryAfterMs: 0 },
      });
    }
  }
}

/** The proxies `workerId` is granted for `host`, one acquire after another (each lease kept). */
async function grantedTo(store: MemoryStore, workerId: string, host: string): Promise<string[]> {
  const got: string[] = [];
  for (let i = 0; i < PROXIES.length; i++) {
    const r = await store.acquire(await acquireFor(store, workerId, host, { domainUseMs: 0 }));
    if (r.kind === "granted") got.push(r.lease.proxy.id);
  }
  return got.sort();
}

/** `a` falls silent after both workers were seen for a while; `b` goes on. */
async function aFallsSilent(clock: FakeClock, store: MemoryStore): Promise<void> {
  // long enough that b's use was surely in a's lists (src/lease/sole-domains.ts)
  clock.advance(40_000);
  await store.touchWorker(POOL, "a");
  await store.touchWorker(POOL, "b");
  clock.advance(ABSENT_MS + 1);
  await store.touchWorker(POOL, "b");
}

describe("Reservations by share key", () => {
  it("reserve a silent worker's share under #<group> when another worker is listed with another key of the group", async () => {
    const { clock, store, reserved, reservations } = await setup();
    for (const p of GROUPED) await store.setPolicy(POOL, p);
    clock.advance(10);
    await use(store, { a: ["shop-a.example"], b: ["shop-b.example"] });
    await aFallsSilent(clock, store);
    const shareOfA = shareOf(PROXIES, ["a", "b"], "a");
    expect(shareOfA.length).toBeGreaterThan(0);

    await reservations().tick();
    expect(reserved.at(-1)?.workers).toEqual([{ workerId: "a", proxies: shareOfA.length, scope: ["#fraud"], whole: [] }]);
    // b gets no proxy of a's share for its own key of the group (a may be on it for shop-a.example)
    const shopB = await grantedTo(store, "b", "shop-b.example");
    expect(shopB).toEqual(PROXIES.filter((p) => !shareOfA.includes(p)).sort());
    // a domain-key outside the group is not kept from b
    expect(await grantedTo(store, "b", "other.example")).toEqual([...PROXIES].sort());
  });

  it("reserve the whole group for a silent worker alone on it, also its keys it was not listed with", async () => {
    const { clock, store, reserved, reservations } = await setup();
    for (const p of GROUPED) await store.setPolicy(POOL, p);
    clock.advance(10);
    await use(store, { a: ["shop-a.example"], b: ["other.example"] });
    await aFallsSilent(clock, store);

    await reservations().tick();
    expect(reserved.at(-1)?.workers[0]).toMatchObject({ workerId: "a", scope: ["#fraud"], whole: ["#fraud"] });
    expect(await grantedTo(store, "b", "shop-b.example")).toEqual([]);
    expect(await grantedTo(store, "b", "shop-a.example")).toEqual([]);
    // outside the group, b's own domain-key is not kept from it, a's share included
    expect(await grantedTo(store, "b", "other.example")).toEqual([...PROXIES].sort());
  });

  it("reserve by domain-key without a share-key mapping (what lets another key of the group onto a silent worker's proxies)", async () => {
    const { clock, store, reserved, reservations } = await setup();
    for (const p of GROUPED) await store.setPolicy(POOL, p);
    clock.advance(10);
    await use(store, { a: ["shop-a.example"], b: ["shop-b.example"] });
    await aFallsSilent(clock, store);
    await reservations(false).tick();
    expect(reserved.at(-1)?.workers[0]).toMatchObject({ workerId: "a", scope: ["shop-a.example"], whole: ["shop-a.example"] });
  });

  it("reserve under the policies a silent worker may still hold: a group set after it fell silent does not lift its claim on its key", async () => {
    const { clock, store, reserved, reservations } = await setup();
    clock.advance(10);
    // no groups yet: a is alone on shop-a.example, b on shop-b.example
    await use(store, { a: ["shop-a.example"], b: ["shop-b.example"] });
    await aFallsSilent(clock, store);
    // the group is set while a is silent: a's fallback pool still cuts by its old snapshot (alone
    // on shop-a.example, every proxy), the current policies would put a and b together on #fraud
    // (shop-b.example first: the set in between, with shop-b.example alone in the group, changes nothing)
    for (const p of [...GROUPED].reverse()) await store.setPolicy(POOL, p);
    await reservations().tick();
    const a = reserved.at(-1)?.workers[0];
    expect(a?.scope).toEqual(["#fraud", "shop-a.example"]);
    expect(a?.whole).toEqual(["shop-a.example"]);
    expect(await grantedTo(store, "b", "shop-a.example")).toEqual([]);
    const shareOfA = shareOf(PROXIES, ["a", "b"], "a");
    expect(await grantedTo(store, "b", "shop-b.example")).toEqual(PROXIES.filter((p) => !shareOfA.includes(p)).sort());
  });
});
