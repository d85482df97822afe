/**
 * What a pool remembers of its recent leases (docs/store-semantics.md §longest TTL, §domain uses):
 * the longest TTL granted or renewed lately, which a hold after a loss of state waits for; the
 * domain-keys workers leased; and the reservation of a whole domain-key for a silent worker.
 */
import { describe, expect, it } from "vitest";
import { policySpec } from "@proxybroker/sdk/model";
import { acq, addProxies, deny, grant, openStore, renew, type StoreFactory } from "./harness.js";

export function latelySuite(factory: StoreFactory): void {
  describe("the longest TTL lately and the hold after a loss", () => {
    it("tells the pool's policy version, as listPolicies does, changing with each policy change", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const before = await h.store.listPolicies("default");
      expect((await h.store.holdState("default")).policyVersion).toBe(before.version);
      await h.store.setPolicy("default", policySpec({ pattern: "shop.example.com", isolationGroup: "m" }));
      const after = (await h.store.holdState("default")).policyVersion;
      expect(after).not.toBe(before.version);
      expect(after).toBe((await h.store.listPolicies("default")).version);
    });

    it("records the longest TTL granted or renewed, and forgets it once no lease of it can run", async () => {
      const h = await openStore(factory);
      await addProxies(h, 3);
      expect(await h.store.holdState("default")).toMatchObject({ heldUntil: 0, longestTtlMs: 0 });
      const long = await grant(h, acq({ ttlMs: 8_000 }));
      await grant(h, acq({ ttlMs: 2_000, domainKey: "b.example" }));
      expect((await h.store.holdState("default")).longestTtlMs).toBe(8_000);
      // renewed with its TTL, the long lease keeps the record up
      h.clock.advance(6_000);
      expect((await renew(h, long, 8_000)).kind).toBe("renewed");
      h.clock.advance(6_000);
      expect((await h.store.holdState("default")).longestTtlMs).toBe(8_000);
      // no lease of 8 s granted or renewed for longer than 8 s (+ 1 s of the record's refresh): gone
      h.clock.advance(3_001);
      expect((await h.store.holdState("default")).longestTtlMs).toBe(0);
      await grant(h, acq({ ttlMs: 2_000, domainKey: "c.example" }));
      expect((await h.store.holdState("default")).longestTtlMs).toBe(2_000);
    });

    it("holds grants for the longest TTL the pool recorded, from the moment the loss was noticed, and says so", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      const e = await h.store.ensureEpoch("default", { expected: "", holdMs: 0, lost: false });
      const version = (await h.store.listPolicies("default")).version;
      await grant(h, acq({ policyVersion: version, ttlMs: 5_000 }));
      const noticed = h.clock.now();
      h.clock.advance(100);
      // the caller knows of 2 s leases only: the pool's record of 5 s wins
      const held = await h.store.ensureEpoch("default", { expected: e.epoch, holdMs: 2_000, lost: true, since: noticed });
      expect(held.grantsFrom).toBe(noticed + 5_000);
      expect(await h.store.holdState("default")).toMatchObject({ heldUntil: noticed + 5_000, longestTtlMs: 5_000 });
      // the same loss told again later (a retry after a failure) holds no longer
      h.clock.advance(1_000);
      expect((await h.store.ensureEpoch("default", { expected: e.epoch, holdMs: 2_000, lost: true, since: noticed })).grantsFrom).toBe(
        noticed + 5_000,
      );
      expect(await deny(h, acq({ policyVersion: version, domainKey: "other.example" }))).toBe(noticed + 5_000 - h.clock.now());
      h.clock.advance(4_000);
      expect((await h.store.holdState("default")).heldUntil).toBe(0);
      await grant(h, acq({ policyVersion: version, domainKey: "other.example" }));
    });
  });

  describe("domain-key uses", () => {
    it("records a worker's use of a domain-key when asked, with its first and last use; a lapsed use starts over", async () => {
      const h = await openStore(factory);
      await addProxies(h, 3);
      const t0 = h.clock.now();
      await grant(h, acq({ workerId: "w1", domainUseMs: 60_000 }));
      await grant(h, acq({ workerId: "w2", domainKey: "b.example" }));
      h.clock.advance(10_000);
      await grant(h, acq({ workerId: "w1", domainUseMs: 60_000 }));
      expect(await h.store.domainUses("default", h.clock.now() - 60_000)).toEqual([
        { workerId: "w1", domainKey: "shop.example.com", firstUsedAt: t0, lastUsedAt: t0 + 10_000 },
      ]);
      // a denied acquire is demand too
      await deny(h, acq({ workerId: "w3", domainUseMs: 60_000, domainKey: "b.example", proxyId: "10.99.0.1:1" }));
      expect((await h.store.domainUses("default", h.clock.now() - 60_000)).map((u) => u.workerId).sort()).toEqual(["w1", "w3"]);
      // unused for longer than its window: listed no more, and a new use starts over
      h.clock.advance(61_000);
      expect(await h.store.domainUses("default", h.clock.now() - 60_000)).toEqual([]);
      await grant(h, acq({ workerId: "w1", domainUseMs: 60_000, domainKey: "c.example" }));
      await grant(h, acq({ workerId: "w1", domainUseMs: 60_000, domainKey: "d.example" }));
      const later = h.clock.now();
      expect((await h.store.domainUses("default", later - 60_000)).map((u) => [u.domainKey, u.firstUsedAt])).toEqual(
        expect.arrayContaining([
          ["c.example", later],
          ["d.example", later],
        ]),
      );
    });

    it("puts back uses after a loss, never moving a later record back", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const now = h.clock.now();
      await h.store.rememberDomainUses("default", [
        { workerId: "w1", domainKey: "a.example", firstUsedAt: now - 5_000, lastUsedAt: now - 1_000 },
        { workerId: "w2", domainKey: "a.example", firstUsedAt: now - 9_000, lastUsedAt: now - 2_000 },
      ]);
      await grant(h, acq({ workerId: "w1", domainKey: "a.example", domainUseMs: 60_000 }));
      await h.store.rememberDomainUses("default", [
        { workerId: "w1", domainKey: "a.example", firstUsedAt: now - 5_000, lastUsedAt: now - 1_000 },
      ]);
      const uses = await h.store.domainUses("default", now - 60_000);
      expect(uses.find((u) => u.workerId === "w1")).toEqual({
        workerId: "w1",
        domainKey: "a.example",
        firstUsedAt: now - 5_000,
        lastUsedAt: now,
      });
      expect(uses.find((u) => u.workerId === "w2")).toEqual({
        workerId: "w2",
        domainKey: "a.example",
        firstUsedAt: now - 9_000,
        lastUsedAt: now - 2_000,
      });
    });
  });

  describe("a domain-key reserved whole", () => {
    it("is granted to its worker only, whatever the proxy; other domain-keys are not affected", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 3);
      await h.store.reserve("default", { proxies: {}, domains: { "shop.example.com": "silent" } });
      expect(await deny(h, acq({ workerId: "w1" }))).toBe(-1);
      expect(await deny(h, acq({ workerId: "w1", proxyId: ids[0]! }))).toBe(-1);
      expect((await grant(h, acq({ workerId: "w1", domainKey: "other.example" }))).proxy.id).toBeDefined();
      expect((await grant(h, acq({ workerId: "silent" }))).domainKey).toBe("shop.example.com");
      await h.store.reserve("default", { proxies: {}, domains: {} });
      await grant(h, acq({ workerId: "w1" }));
    });

    it("an acquire of another worker refused for it is not recorded as a use; a granted one is", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      const k = "shop.example.com";
      const use = { domainUseMs: 60_000 };
      const listed = async () =>
        (await h.store.domainUses("default", h.clock.now() - 60_000)).map((u) => `${u.workerId} ${u.domainKey}`).sort();
      await h.store.reserve("default", { proxies: {}, domains: { [k]: "silent" } });
      // refused: w1 is not listed with k (it must not become established for k while the silent
      // worker may be on it alone, docs/spec.md §7), while its denied acquire of another domain-key
      // (no proxy of that id) is demand as usual
      expect(await deny(h, acq({ workerId: "w1", domainKey: k, ...use }))).toBe(-1);
      expect(await deny(h, acq({ workerId: "w1", domainKey: "b.example", proxyId: "10.99.0.1:1", ...use }))).toBe(-1);
      expect(await listed()).toEqual(["w1 b.example"]);
      // the worker it is reserved for is granted it, and listed
      await grant(h, acq({ workerId: "silent", domainKey: k, ...use }));
      expect(await listed()).toEqual(["silent shop.example.com", "w1 b.example"]);
      // the same for a reservation of every key of an isolation group ("#<group>")
      const group = { group: "g", affinityMs: 0, formerGroups: [] };
      await h.store.reserve("default", { proxies: {}, domains: { "#g": "silent" } });
      expect(await deny(h, acq({ workerId: "w2", domainKey: "c.example", isolation: group, ...use }))).toBe(-1);
      expect(await listed()).toEqual(["silent shop.example.com", "w1 b.example"]);
      // reservations lifted: granted, and listed (after the Redis store's 5 s between two records
      // of one worker's use of one domain-key)
      await h.store.reserve("default", { proxies: {}, domains: {} });
      h.clock.advance(5_000);
      await grant(h, acq({ workerId: "w1", domainKey: k, ...use }));
      await grant(h, acq({ workerId: "w2", domainKey: "c.example", isolation: group, ...use }));
      expect(await listed()).toEqual(["silent shop.example.com", "w1 b.example", "w1 shop.example.com", "w2 c.example"]);
    });

    it("a lease of another worker for it is not extended: REVOKED", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const l = await grant(h, acq({ workerId: "w1", ttlMs: 1_000 }));
      await h.store.reserve("default", { proxies: {}, domains: { "shop.example.com": "w1" } });
      expect((await h.store.renew({ leaseId: l.leaseId, fencingToken: l.fencingToken, ttlMs: 1_000, workerId: "w1" })).kind).toBe(
        "renewed",
      );
      await h.store.reserve("default", { proxies: {}, domains: { "shop.example.com": "silent" } });
      expect(await h.store.renew({ leaseId: l.leaseId, fencingToken: l.fencingToken, ttlMs: 1_000, workerId: "w1" })).toEqual({
        kind: "lost",
        reason: "REVOKED",
      });
    });
  });
}
