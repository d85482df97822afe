/**
 * Internal to the conformance suite: G8 isolation groups. Domain-keys of one group never hold one
 * proxy at the same time; with the group's affinity window, a proxy moves to another key of the
 * group only that long after its last lease for the key it had ended.
 */
import { describe, expect, it } from "vitest";
import type { AcquireParams, AcquireResult, IsolationParams, LeaseView } from "@proxybroker/sdk/model";
import { acq, addProxies, deny, grant, openStore, release, renew, TTL, type Harness, type StoreFactory } from "./harness.js";

const GROUP = "m";
const KEYS = ["k1.example", "k2.example", "k3.example"] as const;
const [K1, K2, K3] = KEYS;
/** A domain-key in no group. */
const FREE = "free.example";

/** An acquire of `domainKey` in isolation group "m" (affinity 0, no former groups unless given). */
function grouped(domainKey: string, over: Partial<AcquireParams> = {}, isolation: Partial<IsolationParams> = {}): AcquireParams {
  return acq({ domainKey, isolation: { group: GROUP, affinityMs: 0, formerGroups: [], ...isolation }, ...over });
}

function grants(results: readonly AcquireResult[]): LeaseView[] {
  return results.flatMap((r) => (r.kind === "granted" ? [r.lease] : []));
}

/** Acquire round-robin over the three keys until each is denied; the leases granted. */
async function fillGroup(h: Harness): Promise<LeaseView[]> {
  const got: LeaseView[] = [];
  const denied = new Set<string>();
  for (let i = 0; denied.size < KEYS.length; i++) {
    const key = KEYS[i % KEYS.length]!;
    if (denied.has(key)) continue;
    const r = await h.store.acquire(grouped(key, { workerId: `w${i}` }));
    if (r.kind === "granted") got.push(r.lease);
    else denied.add(key);
  }
  return got;
}

export function isolationSuite(factory: StoreFactory): void {
  describe("G8 isolation groups", () => {
    it("concurrent acquires over three keys of a group never give one proxy to two keys; a key outside the group still gets it", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 5);
      for (let round = 0; round < 4; round++) {
        const results = await Promise.all(
          Array.from({ length: 60 }, (_, i) => h.store.acquire(grouped(KEYS[i % 3]!, { workerId: `w${i}` }))),
        );
        const got = grants(results);
        expect(got, `round ${round}`).toHaveLength(5);
        expect(new Set(got.map((l) => l.proxy.id)), `round ${round}`).toEqual(new Set(ids));
        for (const r of results) if (r.kind === "denied") expect(r.retryAfterMs, `round ${round}`).toBe(TTL);
        // a key outside the group is not held back by the group's leases
        const outside = await grant(h, acq({ domainKey: FREE, proxyId: got[0]!.proxy.id }));
        expect(outside.proxy.id).toBe(got[0]!.proxy.id);
        const another = await grant(h, acq({ domainKey: "other.example" }));
        // nothing more for the group while its leases live
        expect(await deny(h, grouped(K1))).toBe(TTL);
        await Promise.all([...got, outside, another].map((l) => release(h, l, "TARGET_ERROR")));
        h.clock.advance(TTL);
      }
    });

    it("round-robin over three keys until all are denied grants every proxy once, to one key", async () => {
      for (const n of [12, 100]) {
        const h = await openStore(factory);
        const ids = await addProxies(h, n);
        const got = await fillGroup(h);
        expect(got, `${n} proxies`).toHaveLength(n);
        expect(new Set(got.map((l) => l.proxy.id)), `${n} proxies`).toEqual(new Set(ids));
        for (const key of KEYS) expect(got.filter((l) => l.domainKey === key).length, `${key} of ${n}`).toBeGreaterThan(n / 6);
      }
    });

    it("over many rounds of acquire and release every proxy is used", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 12);
      const uses = new Map<string, number>(ids.map((id) => [id, 0]));
      const rounds = 200;
      for (let round = 0; round < rounds; round++) {
        const got: LeaseView[] = [];
        for (const key of KEYS) got.push(await grant(h, grouped(key)));
        expect(new Set(got.map((l) => l.proxy.id)).size, `round ${round}`).toBe(KEYS.length);
        for (const l of got) uses.set(l.proxy.id, (uses.get(l.proxy.id) ?? 0) + 1);
        await Promise.all(got.map((l) => release(h, l, "TARGET_ERROR")));
        h.clock.advance(10);
      }
      const mean = (rounds * KEYS.length) / ids.length;
      for (const [id, n] of uses) expect(n, id).toBeGreaterThan(mean / 3);
    });

    it("a release frees the proxy for the group at once with affinity 0", async () => {
      const h = await openStore(factory);
      const [p] = await addProxies(h, 1);
      const l = await grant(h, grouped(K1, { proxyId: p! }));
      expect(await deny(h, grouped(K2, { proxyId: p! }))).toBe(TTL);
      expect(await deny(h, grouped(K3))).toBe(TTL);
      await release(h, l);
      expect((await grant(h, grouped(K2, { proxyId: p! }))).proxy.id).toBe(p);
    });

    it("with an affinity window, another key of the group gets the proxy only that long after the release; its own key at once", async () => {
      const h = await openStore(factory);
      const [p] = await addProxies(h, 1);
      const W = 5_000;
      const first = await grant(h, grouped(K1, {}, { affinityMs: W }));
      // held until its expiry plus the window
      expect(await deny(h, grouped(K2, {}, { affinityMs: W }))).toBe(TTL + W);
      h.clock.advance(1_000);
      await release(h, first);
      // its own key gets it back at once (no pacing)
      const again = await grant(h, grouped(K1, { proxyId: p! }, { affinityMs: W }));
      expect(await deny(h, grouped(K2, { proxyId: p! }, { affinityMs: W }))).toBe(TTL + W);
      await release(h, again);
      expect(await deny(h, grouped(K2, { proxyId: p! }, { affinityMs: W }))).toBe(W);
      expect(await deny(h, grouped(K3, {}, { affinityMs: W }))).toBe(W);
      h.clock.advance(W - 1);
      expect(await deny(h, grouped(K2, { proxyId: p! }, { affinityMs: W }))).toBe(1);
      h.clock.advance(1);
      expect((await grant(h, grouped(K2, {}, { affinityMs: W }))).proxy.id).toBe(p);
    });

    it("an expired lease holds the proxy until its expiry plus the window; a renewal extends the hold", async () => {
      const h = await openStore(factory);
      const [p] = await addProxies(h, 1);
      const W = 2_000;
      const l = await grant(h, grouped(K1, { ttlMs: 1_000 }, { affinityMs: W }));
      expect(await deny(h, grouped(K2, { proxyId: p! }))).toBe(1_000 + W);
      h.clock.advance(500);
      expect(await renew(h, l, 1_000)).toEqual({ kind: "renewed", expireAt: h.clock.now() + 1_000, ttlMs: 1_000 });
      expect(await deny(h, grouped(K2, { proxyId: p! }))).toBe(1_000 + W);
      h.clock.advance(1_000); // expired: held for the window from its expiry
      expect(await deny(h, grouped(K2, { proxyId: p! }))).toBe(W);
      // a release after the expiry changes nothing
      h.clock.advance(500);
      expect(await release(h, l)).toEqual({ kind: "lost", reason: "EXPIRED" });
      expect(await deny(h, grouped(K2))).toBe(W - 500);
      h.clock.advance(W - 501);
      expect(await deny(h, grouped(K2))).toBe(1);
      h.clock.advance(1);
      expect((await grant(h, grouped(K2))).proxy.id).toBe(p);
    });

    it("a shorter lease, or a release that leaves another live holder of the pair, keeps the hold", async () => {
      const h = await openStore(factory);
      const [p] = await addProxies(h, 1);
      const W = 1_000;
      const a = await grant(h, grouped(K1, { maxConcurrency: 2, ttlMs: 20_000 }, { affinityMs: W }));
      // a grant of a shorter lease does not lower the hold
      const b = await grant(h, grouped(K1, { maxConcurrency: 2, ttlMs: 10_000 }, { affinityMs: W }));
      expect(await deny(h, grouped(K2, { proxyId: p! }))).toBe(20_000 + W);
      h.clock.advance(2_000);
      await release(h, b);
      expect(await deny(h, grouped(K2, { proxyId: p! }))).toBe(18_000 + W);
      await release(h, a);
      expect(await deny(h, grouped(K2, { proxyId: p! }))).toBe(W);
    });

    it("a denial's retryAfterMs points at the earliest end of a hold", async () => {
      const h = await openStore(factory);
      const [p, q] = await addProxies(h, 2);
      const W = 1_000;
      const a = await grant(h, grouped(K1, { proxyId: p!, ttlMs: 10_000 }, { affinityMs: W }));
      await grant(h, grouped(K3, { proxyId: q!, ttlMs: 20_000 }, { affinityMs: W }));
      expect(await deny(h, grouped(K2))).toBe(10_000 + W);
      expect(await deny(h, grouped(K2, { proxyId: q! }))).toBe(20_000 + W);
      h.clock.advance(2_000);
      await release(h, a);
      expect(await deny(h, grouped(K2))).toBe(W);
      // an acquire aimed at the other proxy waits for its hold
      expect(await deny(h, grouped(K1, { proxyId: q! }))).toBe(18_000 + W);
    });

    it("formerGroups: a lease granted under the old group holds the proxy for keys that had it, until released", async () => {
      const h = await openStore(factory);
      const [p] = await addProxies(h, 1);
      const moved = { group: "new", formerGroups: ["old"] };
      const old = await grant(h, grouped(K1, { proxyId: p! }, { group: "old" }));
      expect(await deny(h, grouped(K2, { proxyId: p! }, moved))).toBe(TTL);
      expect(await deny(h, grouped(K2, {}, moved))).toBe(TTL);
      // no group now, only a former one
      expect(await deny(h, grouped(K3, { proxyId: p! }, { group: "", formerGroups: ["old"] }))).toBe(TTL);
      // the old group is not checked by acquires that do not name it
      await release(h, await grant(h, grouped(K3, { proxyId: p! }, { group: "new" })));
      await release(h, old);
      const now = await grant(h, grouped(K2, { proxyId: p! }, moved));
      // nothing was recorded under the former group
      const back = await grant(h, grouped(K1, { proxyId: p! }, { group: "old" }));
      expect(back.proxy.id).toBe(now.proxy.id);
    });

    it("a session bound to a proxy another key of the group holds waits for it rather than switching", async () => {
      const h = await openStore(factory);
      await addProxies(h, 3);
      const session = grouped(K2, { sessionKey: "cart-1" });
      const first = await grant(h, session);
      await release(h, first);
      const bound = first.proxy.id;
      const other = await grant(h, grouped(K1, { proxyId: bound }));
      // two other proxies are free: the session still waits for its own
      expect(await deny(h, session)).toBe(TTL);
      h.clock.advance(1_000);
      expect(await deny(h, session)).toBe(TTL - 1_000);
      await release(h, other);
      const back = await grant(h, session);
      expect(back.proxy.id).toBe(bound);
      expect(back.sessionRebound).toBe(false);
    });

    it("reservations: a scope entry '#<group>' reserves a proxy for every key of the group", async () => {
      const h = await openStore(factory);
      const [p, q] = await addProxies(h, 2);
      await h.store.reserve("default", { proxies: { [p!]: "silent" }, domains: {}, scopes: { silent: [`#${GROUP}`] } });
      expect(await deny(h, grouped(K1, { workerId: "w1", proxyId: p! }))).toBe(-1);
      expect((await grant(h, grouped(K1, { workerId: "w1" }))).proxy.id).toBe(q);
      expect(await deny(h, grouped(K2, { workerId: "w1" }))).toBe(TTL);
      // keys outside the group, or in another group, are not in the scope
      expect((await grant(h, acq({ domainKey: FREE, workerId: "w1", proxyId: p! }))).proxy.id).toBe(p);
      expect((await grant(h, grouped(K2, { workerId: "w1", proxyId: p! }, { group: "other" }))).proxy.id).toBe(p);
      // the worker it is reserved for gets it
      expect((await grant(h, grouped(K3, { workerId: "silent", proxyId: p! }))).proxy.id).toBe(p);
    });

    it("reservations: domains['#<group>'] reserves every key of the group for its worker", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      await h.store.reserve("default", { proxies: {}, domains: { [`#${GROUP}`]: "silent" } });
      expect(await deny(h, grouped(K1, { workerId: "w1" }))).toBe(-1);
      expect(await deny(h, grouped(K2, { workerId: "w1" }))).toBe(-1);
      // the same key acquired without the group, and another group, are not reserved
      await grant(h, acq({ domainKey: K1, workerId: "w1" }));
      await grant(h, grouped(K2, { workerId: "w1" }, { group: "other" }));
      await grant(h, grouped(K3, { workerId: "silent" }));
      await h.store.reserve("default", { proxies: {}, domains: {} });
      await grant(h, grouped(K3, { workerId: "w1" }));
    });

    it("reservations: domains['#<group>'] naming another worker holds a key whose own entry names the caller", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      await h.store.reserve("default", { proxies: {}, domains: { [K1]: "w1", [`#${GROUP}`]: "silent" } });
      expect(await deny(h, grouped(K1, { workerId: "w1" }))).toBe(-1);
    });

    it("a renewal of a lease on a proxy reserved for another worker's group share is not extended", async () => {
      const h = await openStore(factory);
      const [p] = await addProxies(h, 1);
      const lease = await grant(h, grouped(K1, { workerId: "w1" }));
      await h.store.reserve("default", { proxies: { [p!]: "silent" }, domains: {}, scopes: { silent: [`#${GROUP}`] } });
      const r = await h.store.renew({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, ttlMs: 0, workerId: "w1" });
      expect(r).toEqual({ kind: "lost", reason: "REVOKED" });
      // a lease of a key in no group is extended
      const free = await grant(h, acq({ domainKey: FREE, workerId: "w1" }));
      expect((await h.store.renew({ leaseId: free.leaseId, fencingToken: free.fencingToken, ttlMs: 0, workerId: "w1" })).kind).toBe(
        "renewed",
      );
    });

    it("a renewal holds the proxy in the group its key has now, as isolationOf says", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      // granted in no group, then its key joins group m: the renewal writes its hold there
      const lease = await grant(h, acq({ domainKey: K1 }));
      const inGroup = () => ({ group: GROUP, affinityMs: 0 });
      h.clock.advance(1_000);
      const r = await h.store.renew({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, ttlMs: 0, isolationOf: inGroup });
      expect(r.kind).toBe("renewed");
      expect(await deny(h, grouped(K2))).toBe(TTL);
      // released: the group's other keys get the proxy at once (the release ends the hold it renewed)
      await release(h, lease);
      await grant(h, grouped(K2));
    });

    it("a renewal of a key in no group now writes no hold; one whose group is not known keeps its grant's", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      const a = await grant(h, grouped(K1));
      const b = await grant(h, grouped(K2));
      h.clock.advance(TTL - 1_000);
      // K1 left the group: its renewal holds nothing there; the grant's hold runs out at its expiry
      const none = () => ({ group: "", affinityMs: 0 });
      expect((await h.store.renew({ leaseId: a.leaseId, fencingToken: a.fencingToken, ttlMs: 0, isolationOf: none })).kind).toBe("renewed");
      // K2's group is not known: the renewal raises the hold of its grant
      expect((await h.store.renew({ leaseId: b.leaseId, fencingToken: b.fencingToken, ttlMs: 0, isolationOf: () => undefined })).kind).toBe(
        "renewed",
      );
      h.clock.advance(1_000);
      // a's hold ended with its grant's expiry, though a runs on; b's follows its renewal
      expect((await grant(h, grouped(K3))).proxy.id).toBe(a.proxy.id);
      expect(await deny(h, grouped(K3))).toBe(TTL - 1_000);
    });

    it("a key that joined the group holds a proxy by its live leases only, not by its pacing", async () => {
      const h = await openStore(factory);
      const [p] = await addProxies(h, 1);
      // K1's lease, granted before K1 joined: recorded in no group; K1 paces at 5 s
      const before = await grant(h, acq({ domainKey: K1, minIntervalMs: 5_000 }));
      const joined = { joinedKeys: [K1] };
      expect(await deny(h, grouped(K2, {}, joined))).toBe(TTL);
      await release(h, before);
      // released: K2 gets the proxy at once, whatever K1's interval
      expect((await grant(h, grouped(K2, {}, joined))).proxy.id).toBe(p);
    });
  });
}
