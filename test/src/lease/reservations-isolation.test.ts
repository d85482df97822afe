/**
 * Reservations and isolation groups (G8): a silent worker's claim names each key with its share
 * key — `#<group>` for the domain-keys of an isolation group — as its fallback pool cut it, and the
 * reservation covers both, so that nobody else gets its proxies for any key of the group while it
 * may use them for one, whatever the policies became since.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "@proxybroker/sdk/engine";
import { DEFAULT_SCORING, policySpec, shareOf } from "@proxybroker/sdk/model";
import type { AcquireParams, DomainPolicySpec, FallbackClaim } from "@proxybroker/sdk/model";
import { Reservations, type ReservedSummary } from "../../../src/lease/reservations.js";
import { acq } from "../../sdk/engine/conformance/harness.js";
import { fakeClock } from "../../support/fake-clock.js";

const POOL = "default";
const PROXIES = Array.from({ length: 12 }, (_, i) => `10.9.0.${i + 1}:3128`);
const ABSENT_MS = 3_000;
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
  const reservations = new Reservations({
    store,
    pools: () => [POOL],
    clock: () => clock.now(),
    absentAfterMs: ABSENT_MS,
    fallbackWindowMs: 600_000,
    intervalMs: 500,
    onReserved: (_, r) => reserved.push(r),
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
    ...(group === "" ? {} : { isolation: { group, affinityMs: 0, formerGroups: [] } }),
    ...over,
  });
}

/** The proxies `workerId` is granted for `host`, one acquire after another (each lease kept). */
async function grantedTo(store: MemoryStore, workerId: string, host: string): Promise<string[]> {
  const got: string[] = [];
  for (let i = 0; i < PROXIES.length; i++) {
    const r = await store.acquire(await acquireFor(store, workerId, host));
    if (r.kind === "granted") got.push(r.lease.proxy.id);
  }
  return got.sort();
}

/** `a` claims `key` of the group (its share, or whole) and falls silent; `b` goes on. */
async function aClaimsAndFallsSilent(o: Awaited<ReturnType<typeof setup>>, key: string, whole: boolean): Promise<void> {
  const { clock, store } = o;
  clock.advance(10);
  const claim: FallbackClaim = {
    version: 1,
    members: ["a", "b"],
    keys: [{ domainKey: key, shareKey: "#fraud", whole, untilMs: clock.now() + 600_000 }],
  };
  await store.hearWorker(POOL, "a", { heardAt: clock.now(), claim });
  clock.advance(ABSENT_MS + 1);
  await store.hearWorker(POOL, "b", { heardAt: clock.now() });
  await o.reservations.tick();
}

describe("Reservations by share key", () => {
  it("a silent worker's share for a key of a group is kept from every key of the group, not from other keys", async () => {
    const o = await setup();
    for (const p of GROUPED) await o.store.setPolicy(POOL, p);
    await aClaimsAndFallsSilent(o, "shop-a.example", false);
    const shareOfA = shareOf(PROXIES, ["a", "b"], "a");
    expect(shareOfA.length).toBeGreaterThan(0);
    expect(o.reserved.at(-1)?.workers).toEqual([
      { workerId: "a", heardAgoMs: ABSENT_MS + 1, proxies: shareOfA.length, scope: ["#fraud", "shop-a.example"], whole: [] },
    ]);
    // b gets no proxy of a's share for its own key of the group (a may be on it for shop-a.example)
    expect(await grantedTo(o.store, "b", "shop-b.example")).toEqual(PROXIES.filter((p) => !shareOfA.includes(p)).sort());
    // a domain-key outside the group is not kept from b
    expect(await grantedTo(o.store, "b", "other.example")).toEqual([...PROXIES].sort());
  });

  it("a silent worker alone on a group has the whole group reserved, also its keys it was not listed with", async () => {
    const o = await setup();
    for (const p of GROUPED) await o.store.setPolicy(POOL, p);
    await aClaimsAndFallsSilent(o, "shop-a.example", true);
    expect(o.reserved.at(-1)?.workers[0]).toMatchObject({ workerId: "a", whole: ["shop-a.example", "#fraud"] });
    expect(await grantedTo(o.store, "b", "shop-b.example")).toEqual([]);
    expect(await grantedTo(o.store, "b", "shop-a.example")).toEqual([]);
    expect(await grantedTo(o.store, "b", "other.example")).toEqual([...PROXIES].sort());
  });

  it("the claimed domain-key stays reserved whatever the policies became since: a key that left the group is still kept", async () => {
    const o = await setup();
    for (const p of GROUPED) await o.store.setPolicy(POOL, p);
    await aClaimsAndFallsSilent(o, "shop-a.example", true);
    // shop-a.example leaves the group while a is silent (its fallback pool still cuts by its old snapshot)
    await o.store.setPolicy(POOL, policySpec({ pattern: "shop-a.example" }));
    o.clock.advance(31_000); // past the recompute
    await o.store.hearWorker(POOL, "b", { heardAt: o.clock.now() });
    await o.reservations.tick();
    expect(await grantedTo(o.store, "b", "shop-a.example")).toEqual([]);
    expect(await grantedTo(o.store, "b", "shop-b.example")).toEqual([]);
  });
});
