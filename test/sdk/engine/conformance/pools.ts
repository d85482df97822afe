/**
 * Internal to the conformance suite: §4 tiers, labels, workers, pool stats, and domain policies.
 */
import { describe, expect, it } from "vitest";
import { MAX_WORKERS_PER_POOL, policySpec, type DomainPolicySpec, type FallbackClaim } from "@proxybroker/sdk/model";
import { POLICY_HISTORY_MS } from "@proxybroker/sdk/engine";
import { acq, addProxies, deny, grant, openStore, proxySpec, TTL, type StoreFactory } from "./harness.js";

function policy(pattern: string, over: Partial<DomainPolicySpec> = {}): DomainPolicySpec {
  return policySpec({ pattern, maxConcurrency: 1, ...over });
}

export function poolSuite(factory: StoreFactory): void {
  describe("§4 tiers, labels, workers", () => {
    it("a tier request gets only proxies of that tier", async () => {
      const h = await openStore(factory);
      await h.store.addProxies("default", [
        ...[0, 1, 2].map((i) => proxySpec(i, { tier: "datacenter" })),
        ...[3, 4, 5].map((i) => proxySpec(i, { tier: "residential" })),
      ]);
      for (let i = 0; i < 3; i++) expect((await grant(h, acq({ tier: "residential" }))).proxy.tier).toBe("residential");
      expect(await deny(h, acq({ tier: "residential" }))).toBe(TTL);
      await deny(h, acq({ tier: "mobile" }));
      expect((await grant(h, acq({ tier: "" }))).proxy.tier).toBe("datacenter");
    });

    it("a labels request gets only proxies whose labels all match", async () => {
      const h = await openStore(factory);
      await h.store.addProxies("default", [
        proxySpec(0, { labels: { country: "de" } }),
        proxySpec(1, { labels: { country: "fr", asn: "3215" } }),
        proxySpec(2, { labels: { country: "fr", asn: "5410" } }),
      ]);
      const a = await grant(h, acq({ labels: { country: "fr", asn: "5410" } }));
      expect(a.proxy.id).toBe(proxySpec(2).id);
      expect(a.proxy.labels).toEqual({ country: "fr", asn: "5410" });
      expect((await grant(h, acq({ labels: { country: "fr" } }))).proxy.id).toBe(proxySpec(1).id);
      await deny(h, acq({ labels: { country: "fr" } }));
      expect((await grant(h, acq({ labels: {} }))).proxy.id).toBe(proxySpec(0).id);
      expect(await deny(h, acq({ domainKey: "other.example", labels: { country: "us" } }))).toBe(-1);
    });

    it("liveWorkers lists the workers that acquired, with the time they were last seen", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const t0 = h.clock.now();
      await grant(h, acq({ workerId: "w-a" }));
      h.clock.advance(1_000);
      await deny(h, acq({ workerId: "w-b" })); // asking counts as being alive
      h.clock.advance(1_000);
      await deny(h, acq({ workerId: "w-a" }));
      await deny(h, acq({ pool: "elsewhere", workerId: "w-c" }));
      const byId = (ws: readonly { workerId: string }[]): string[] => ws.map((w) => w.workerId).sort();
      const all = await h.store.liveWorkers("default", 0);
      expect(byId(all)).toEqual(["w-a", "w-b"]);
      expect(all.find((w) => w.workerId === "w-a")?.lastSeenAt).toBe(t0 + 2_000);
      expect(all.find((w) => w.workerId === "w-b")?.lastSeenAt).toBe(t0 + 1_000);
      expect(byId(await h.store.liveWorkers("default", t0 + 1_500))).toEqual(["w-a"]);
      expect(byId(await h.store.liveWorkers("default", t0 + 1_000))).toEqual(["w-a", "w-b"]);
      expect(byId(await h.store.liveWorkers("elsewhere", 0))).toEqual(["w-c"]);
      expect(await h.store.liveWorkers("never-used", 0)).toEqual([]);
    });

    it("forgetWorker: a worker that left is no longer live, and live again once seen (its fallback record kept)", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      await h.store.touchWorker("default", "w-a"); // keeps a fallback pool
      await grant(h, acq({ workerId: "w-b" }));
      expect(await h.store.forgetWorker("default", "w-a")).toBe(true);
      expect(await h.store.forgetWorker("default", "w-a")).toBe(false);
      expect(await h.store.forgetWorker("default", "never-seen")).toBe(false);
      expect(await h.store.forgetWorker("never-used", "w-a")).toBe(false);
      expect((await h.store.liveWorkers("default", 0)).map((w) => w.workerId)).toEqual(["w-b"]);
      expect((await h.store.poolStats("default", 0)).liveWorkers).toBe(1);
      h.clock.advance(1_000);
      await deny(h, acq({ workerId: "w-a" })); // w-b holds the proxy; asking counts as being alive
      const back = (await h.store.liveWorkers("default", 0)).find((w) => w.workerId === "w-a");
      expect(back?.lastSeenAt).toBe(h.clock.now());
      expect(back?.fallbackPoolAt).toBeGreaterThan(0);
    });

    it("records the caller's authenticated name as last_used_by when given, else the worker id", async () => {
      const h = await openStore(factory);
      const [x, y] = await addProxies(h, 2);
      const a = await grant(h, acq({ workerId: "host-1", identity: "fleet", proxyId: x! }));
      expect(a.proxy.lastUsedBy).toBe("fleet");
      await grant(h, acq({ workerId: "host-2", proxyId: y! }));
      const page = await h.store.listProxies("default", { size: 10, after: "" });
      expect(Object.fromEntries(page.proxies.map((p) => [p.id, p.lastUsedBy]))).toEqual({ [x!]: "fleet", [y!]: "host-2" });
      expect((await h.store.liveWorkers("default", 0)).map((w) => w.workerId).sort()).toEqual(["host-1", "host-2"]);
    });

    it("keeps at most MAX_WORKERS_PER_POOL worker ids (the least recently seen go) and forgets ids not seen for a week", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const t0 = h.clock.now();
      await deny(h, acq({ workerId: "old", minIntervalMs: 0, domainKey: "none.example", tier: "none" }));
      h.clock.advance(1);
      await h.store.touchWorker("default", "kept");
      h.clock.advance(1);
      // invented ids, as a hostile client would send them
      const ids = Array.from({ length: MAX_WORKERS_PER_POOL - 1 }, (_, i) => `random-${i}`);
      for (let i = 0; i < ids.length; i += 500) await Promise.all(ids.slice(i, i + 500).map((id) => h.store.touchWorker("default", id)));
      h.clock.advance(1);
      await h.store.touchWorker("default", "kept");
      await deny(h, acq({ workerId: "new", domainKey: "none.example", tier: "none" }));
      const seen = await h.store.liveWorkers("default", 0);
      expect(seen.length).toBe(MAX_WORKERS_PER_POOL);
      const names = new Set(seen.map((w) => w.workerId));
      expect(names.has("old")).toBe(false);
      expect(names.has("random-0")).toBe(false);
      expect(names.has("kept")).toBe(true);
      expect(names.has("new")).toBe(true);
      expect((await h.store.poolStats("default", 0)).liveWorkers).toBe(MAX_WORKERS_PER_POOL);
      // a week later, a new id sweeps away the ids not seen since
      h.clock.set(t0 + 7 * 86_400_000 + 10);
      await h.store.touchWorker("default", "later");
      expect((await h.store.liveWorkers("default", 0)).map((w) => w.workerId)).toEqual(["later"]);
    });

    it("rememberWorkers puts workers back with their times, and never moves a later record back", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const t0 = h.clock.now();
      await h.store.touchWorker("default", "recent"); // seen now, with a fallback pool
      await h.store.rememberWorkers("default", [
        { workerId: "recent", lastSeenAt: t0 - 5_000, fallbackPoolAt: t0 - 5_000 },
        { workerId: "silent", lastSeenAt: t0 - 9_000, fallbackPoolAt: t0 - 9_500 },
        { workerId: "plain", lastSeenAt: t0 - 1_000, fallbackPoolAt: 0 },
      ]);
      expect(await h.store.liveWorkers("default", 0)).toEqual([
        { workerId: "plain", lastSeenAt: t0 - 1_000, fallbackPoolAt: 0 },
        { workerId: "recent", lastSeenAt: t0, fallbackPoolAt: t0 },
        { workerId: "silent", lastSeenAt: t0 - 9_000, fallbackPoolAt: t0 - 9_500 },
      ]);
      await h.store.rememberWorkers("default", []);
      expect(await h.store.liveWorkers("default", t0 - 2_000)).toHaveLength(2);
    });

    it("keeps the latest list a worker said it holds, never moved back, and puts it back after a loss", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const t0 = h.clock.now();
      await h.store.touchWorker("default", "lister", { listsAt: t0 - 3_000 });
      await h.store.touchWorker("default", "lister", { listsAt: t0 - 8_000 }); // an older list: not moved back
      await h.store.touchWorker("default", "lister"); // none said: kept
      await h.store.touchWorker("default", "mute");
      expect(await h.store.liveWorkers("default", 0)).toEqual([
        { workerId: "lister", lastSeenAt: t0, fallbackPoolAt: t0, listsAt: t0 - 3_000 },
        { workerId: "mute", lastSeenAt: t0, fallbackPoolAt: t0 },
      ]);
      await h.store.rememberWorkers("default", [
        { workerId: "lister", lastSeenAt: t0, fallbackPoolAt: t0, listsAt: t0 - 1_000 },
        { workerId: "back", lastSeenAt: t0 - 2_000, fallbackPoolAt: t0 - 2_000, listsAt: t0 - 4_000 },
      ]);
      expect((await h.store.liveWorkers("default", 0)).map((w) => [w.workerId, w.listsAt])).toEqual([
        ["back", t0 - 4_000],
        ["lister", t0 - 1_000],
        ["mute", undefined],
      ]);
    });

    it("hearWorker: live, in contact up to the pong it echoed (never moved back), its latest two claims kept", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const t0 = h.clock.now();
      const claim = (version: number, key: string): FallbackClaim => ({
        version,
        members: ["a", "b"],
        keys: [{ domainKey: key, shareKey: key, whole: version % 2 === 0, untilMs: t0 + 60_000 }],
      });
      await h.store.hearWorker("default", "a", { heardAt: t0 - 500 });
      const heard = async () => (await h.store.liveWorkers("default", 0, { claims: true })).find((w) => w.workerId === "a");
      expect(await heard()).toEqual({ workerId: "a", lastSeenAt: t0, fallbackPoolAt: t0, heardAt: t0 - 500, claims: [] });
      await h.store.hearWorker("default", "a", { heardAt: t0 - 900 }); // an older echo arriving late
      expect((await heard())?.heardAt).toBe(t0 - 500);
      await h.store.hearWorker("default", "a", { heardAt: t0, claim: claim(11, "one.example") });
      await h.store.hearWorker("default", "a", { heardAt: t0, claim: claim(11, "one.example") }); // sent again until acknowledged
      expect((await heard())?.claims).toEqual([claim(11, "one.example")]);
      await h.store.hearWorker("default", "a", { heardAt: t0, claim: claim(12, "two.example") });
      expect((await heard())?.claims).toEqual([claim(12, "two.example"), claim(11, "one.example")]);
      await h.store.hearWorker("default", "a", { heardAt: t0, claim: claim(13, "three.example") });
      expect((await heard())?.claims).toEqual([claim(13, "three.example"), claim(12, "two.example")]);
      // without the option, no claims are read
      expect((await h.store.liveWorkers("default", 0)).find((w) => w.workerId === "a")?.claims).toBeUndefined();
      // lost with the state, put back; a record the store has again is kept
      await h.store.rememberWorkers("default", [
        { workerId: "a", lastSeenAt: t0, fallbackPoolAt: t0, heardAt: t0 + 1, claims: [claim(9, "old.example")] },
        { workerId: "b", lastSeenAt: t0, fallbackPoolAt: t0, heardAt: t0 - 7_000, claims: [claim(4, "b.example"), claim(3, "b.example")] },
      ]);
      expect((await heard())?.claims?.[0]?.version).toBe(13);
      expect((await heard())?.heardAt).toBe(t0 + 1);
      const b = (await h.store.liveWorkers("default", 0, { claims: true })).find((w) => w.workerId === "b");
      expect(b?.heardAt).toBe(t0 - 7_000);
      expect(b?.claims).toEqual([claim(4, "b.example"), claim(3, "b.example")]);
      // a worker that left leaves no claim behind
      expect(await h.store.forgetWorker("default", "a")).toBe(true);
      await h.store.touchWorker("default", "a");
      const back = (await h.store.liveWorkers("default", 0, { claims: true })).find((w) => w.workerId === "a");
      expect(back?.claims).toEqual([]);
      expect(back?.heardAt).toBeUndefined();
    });

    it("poolStats counts proxies by state and live workers", async () => {
      const h = await openStore(factory, { scoring: { initialScore: 20, scoreAfterQuarantine: 20, maxQuarantines: 1 } });
      const [a, b] = await addProxies(h, 4);
      const health = (id: string, r: "pass" | "fail") => h.store.recordHealth("default", id, r);
      await health(a!, "fail"); // 10: at the floor, still ACTIVE
      expect(await health(a!, "fail")).toMatchObject({ state: "QUARANTINED" });
      await health(b!, "fail");
      await health(b!, "fail");
      expect(await health(b!, "pass")).toMatchObject({ state: "ACTIVE", score: 20 });
      await health(b!, "fail");
      expect(await health(b!, "fail")).toMatchObject({ state: "BLACKLISTED" });
      await grant(h, acq({ workerId: "w-1" }));
      h.clock.advance(10_000);
      await grant(h, acq({ workerId: "w-2" }));
      expect(await h.store.poolStats("default", h.clock.now() - 5_000)).toEqual({
        total: 4,
        active: 2,
        quarantined: 1,
        blacklisted: 1,
        disabled: 0,
        liveWorkers: 1,
      });
      expect((await h.store.poolStats("default", 0)).liveWorkers).toBe(2);
      expect(await h.store.poolStats("empty", 0)).toEqual({
        total: 0,
        active: 0,
        quarantined: 0,
        blacklisted: 0,
        disabled: 0,
        liveWorkers: 0,
      });
    });
  });

  describe("domain policies", () => {
    it("setPolicy bumps the version; acquires with an old version answer stale-policy", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      expect(await h.store.listPolicies("default")).toEqual({ version: ".0", epoch: "", policies: [], history: [], proxies: 2 });
      expect((await h.store.listPolicies("no-such-pool")).proxies).toBe(0);
      await grant(h, acq({ policyVersion: ".0" }));
      await h.store.setPolicy("default", policy("*.example.com", { maxConcurrency: 2 }));
      const v1 = (await h.store.listPolicies("default")).version;
      expect(v1).not.toBe(".0");
      expect(await h.store.acquire(acq({ policyVersion: ".0" }))).toEqual({ kind: "stale-policy", version: v1 });
      await grant(h, acq({ policyVersion: v1 }));
      // another pool's policies are its own
      expect((await h.store.listPolicies("other")).version).toBe(".0");
      expect(await deny(h, acq({ pool: "other", policyVersion: ".0" }))).toBe(-1);
    });

    it("set replaces by pattern, list returns every policy, delete bumps only when it deleted", async () => {
      const h = await openStore(factory);
      const versions = [".0"];
      const bumped = async (): Promise<string> => {
        const v = (await h.store.listPolicies("default")).version;
        expect(v).not.toBe(versions.at(-1));
        versions.push(v);
        return v;
      };
      await h.store.setPolicy("default", policy("shop.example.com", { minIntervalMs: 1_000 }));
      await bumped();
      await h.store.setPolicy("default", policy("shop.example.com", { minIntervalMs: 2_000, group: "shop" }));
      await bumped();
      await h.store.setPolicy("default", policy("*", { banTtlMs: 60_000, defaultTtlMs: 20_000 }));
      await bumped();
      const listed = await h.store.listPolicies("default");
      expect([...listed.policies].sort((x, y) => (x.pattern < y.pattern ? -1 : 1))).toEqual([
        policy("*", { banTtlMs: 60_000, defaultTtlMs: 20_000 }),
        policy("shop.example.com", { minIntervalMs: 2_000, group: "shop" }),
      ]);
      expect(await h.store.deletePolicy("default", "nope.example")).toBe(false);
      expect((await h.store.listPolicies("default")).version).toBe(versions.at(-1));
      expect(await h.store.deletePolicy("default", "*")).toBe(true);
      const last = await bumped();
      expect(await h.store.listPolicies("default")).toMatchObject({
        version: last,
        policies: [policy("shop.example.com", { minIntervalMs: 2_000, group: "shop" })],
      });
    });

    it("keeps the sets it replaced, newest first, for the policy history time", async () => {
      const h = await openStore(factory);
      const t0 = h.clock.now();
      await h.store.setPolicy("default", policy("*.example.com", { group: "g1" }));
      h.clock.advance(1_000);
      await h.store.setPolicy("default", policy("*.example.com", { group: "g2" }));
      h.clock.advance(1_000);
      expect(await h.store.deletePolicy("default", "*.example.com")).toBe(true);
      const set = await h.store.listPolicies("default");
      expect(set.policies).toEqual([]);
      expect(set.history).toEqual([
        { retiredAt: t0 + 2_000, policies: [policy("*.example.com", { group: "g2" })] },
        { retiredAt: t0 + 1_000, policies: [policy("*.example.com", { group: "g1" })] },
        { retiredAt: t0, policies: [] },
      ]);
      h.clock.advance(POLICY_HISTORY_MS - 1_000);
      expect((await h.store.listPolicies("default")).history.map((x) => x.retiredAt)).toEqual([t0 + 2_000]);
      h.clock.advance(1_000);
      expect((await h.store.listPolicies("default")).history).toEqual([]);
    });

    it("a proxy busy, paced or banned under a shadow key is not granted under the new key", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const old = acq({ domainKey: "g1", minIntervalMs: 2_000 });
      const moved = acq({ domainKey: "g2", shadowKeys: ["g1"] });
      const lease = await grant(h, old);
      expect((await h.store.acquire(moved)).kind).toBe("denied");
      // a heartbeat on the old key keeps the proxy away from the new one
      h.clock.advance(TTL - 1);
      await h.store.renew({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, ttlMs: TTL });
      h.clock.advance(2);
      expect((await h.store.acquire(moved)).kind).toBe("denied");
      await h.store.release({
        leaseId: lease.leaseId,
        fencingToken: lease.fencingToken,
        outcome: { kind: "SUCCESS", httpStatus: 200, latencyMs: 0, retryAfterMs: 0 },
      });
      // the old key's pacing still applies after the release
      expect((await h.store.acquire(moved)).kind).toBe("denied");
      h.clock.advance(2_000);
      await grant(h, moved);
      // with a session too
      const h2 = await openStore(factory);
      await addProxies(h2, 1);
      await grant(h2, acq({ domainKey: "g1" }));
      expect((await h2.store.acquire(acq({ domainKey: "g2", shadowKeys: ["g1"], sessionKey: "s" }))).kind).toBe("denied");
    });
  });
}

/** Epochs: a pool's state can be lost (§G4, data loss); versions and grants follow the epoch. */
export function epochSuite(factory: StoreFactory): void {
  describe("epochs", () => {
    it("an epoch is created once; policy versions carry it and never repeat", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      expect((await h.store.listPolicies("default")).epoch).toBe("");
      const first = await h.store.ensureEpoch("default", { expected: "", holdMs: 30_000, lost: false });
      expect(first.grantsFrom).toBe(h.clock.now());
      expect(await h.store.ensureEpoch("default", { expected: first.epoch, holdMs: 30_000, lost: false })).toEqual(first);
      const set = await h.store.listPolicies("default");
      expect(set.epoch).toBe(first.epoch);
      expect(set.version).toBe(`${first.epoch}.0`);
      // an acquire resolved before the epoch existed is stale
      expect((await h.store.acquire(acq({ policyVersion: ".0" }))).kind).toBe("stale-policy");
      await grant(h, acq({ policyVersion: set.version }));
    });

    it("a caller that knew another epoch, or lost writes, holds grants for holdMs", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      const e = await h.store.ensureEpoch("default", { expected: "", holdMs: 0, lost: false });
      const version = (await h.store.listPolicies("default")).version;
      const held = await h.store.ensureEpoch("default", { expected: "an-older-epoch", holdMs: 30_000, lost: false });
      expect(held).toEqual({ epoch: e.epoch, grantsFrom: h.clock.now() + 30_000 });
      expect(await deny(h, acq({ policyVersion: version }))).toBe(30_000);
      h.clock.advance(30_000);
      await grant(h, acq({ policyVersion: version }));
      // writes lost under the same epoch (a restart, a failover): held again, never shortened, for
      // the longer of holdMs and the TTL the pool granted lately (the lease just granted: 30 s)
      const lost = await h.store.ensureEpoch("default", { expected: e.epoch, holdMs: 10_000, lost: true });
      expect(lost.grantsFrom).toBe(h.clock.now() + 30_000);
      expect((await h.store.ensureEpoch("default", { expected: e.epoch, holdMs: 1_000, lost: true })).grantsFrom).toBe(lost.grantsFrom);
      expect(await deny(h, acq({ policyVersion: version }))).toBe(30_000);
      h.clock.advance(30_000);
      // once no lease of that TTL can run any more, holdMs alone counts
      h.clock.advance(2_000);
      expect((await h.store.ensureEpoch("default", { expected: e.epoch, holdMs: 10_000, lost: true })).grantsFrom).toBe(
        h.clock.now() + 10_000,
      );
    });

    it("the server id is stable while the store lives", async () => {
      const h = await openStore(factory);
      const { id } = await h.store.server();
      expect(id).not.toBe("");
      expect((await h.store.server()).id).toBe(id);
    });
  });
}
