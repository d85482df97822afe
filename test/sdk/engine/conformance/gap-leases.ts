/**
 * Reservations before they hold (`Reservations.from`, docs/store-semantics.md §reservations): a
 * silent worker's pairs are granted, and renewed, to callers that keep to their TTL, only until
 * the moment its reservations hold for everybody; never to the others; and as usual after it.
 */
import { describe, expect, it } from "vitest";
import { acq, addProxies, deny, grant, openStore, type StoreFactory } from "./harness.js";

/** The silent worker's reservations hold this long after the test's start. */
const FROM_MS = 4_000;

export function gapLeaseSuite(factory: StoreFactory): void {
  describe("reservations before they hold", () => {
    it("a reserved proxy is granted to a caller that keeps to its TTL, until the reservation holds", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 1);
      const from = h.clock.now() + FROM_MS;
      await h.store.reserve("default", { proxies: { [ids[0]!]: "silent" }, domains: {}, from: { silent: from } });
      // a caller that does not keep to its TTL: never
      expect(await deny(h, acq({ workerId: "stub", ttlMs: 30_000 }))).toBe(-1);
      const l = await grant(h, acq({ workerId: "sdk", ttlMs: 30_000, honorsTtl: true }));
      expect(l.proxy.id).toBe(ids[0]);
      expect(l.ttlMs).toBe(FROM_MS);
      expect(l.expireAt).toBe(from);
      // a TTL shorter than the gap: as asked
      h.clock.advance(1);
      const short = await grant(h, acq({ workerId: "sdk", domainKey: "b.example", ttlMs: 1_000, honorsTtl: true }));
      expect(short.ttlMs).toBe(1_000);
      expect(short.expireAt).toBe(h.clock.now() + 1_000);
    });

    it("grants nothing in the last half second before the reservation holds, nor after", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 1);
      const from = h.clock.now() + FROM_MS;
      await h.store.reserve("default", { proxies: { [ids[0]!]: "silent" }, domains: {}, from: { silent: from } });
      h.clock.advance(FROM_MS - 501);
      expect((await grant(h, acq({ workerId: "sdk", honorsTtl: true }))).expireAt).toBe(from);
      h.clock.advance(2);
      expect(await deny(h, acq({ workerId: "sdk", domainKey: "b.example", honorsTtl: true }))).toBe(-1);
      h.clock.advance(2_000);
      expect(await deny(h, acq({ workerId: "sdk", honorsTtl: true }))).toBe(-1);
      // the silent worker itself, back, gets it
      expect((await grant(h, acq({ workerId: "silent", proxyId: ids[0]! }))).proxy.id).toBe(ids[0]);
    });

    it("a renewal on a reserved pair runs to the moment the reservation holds at most, then REVOKED", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 1);
      const l = await grant(h, acq({ workerId: "sdk", ttlMs: 2_000, honorsTtl: true }));
      const from = h.clock.now() + FROM_MS;
      await h.store.reserve("default", { proxies: { [ids[0]!]: "silent" }, domains: {}, from: { silent: from } });
      const renew = (honorsTtl: boolean) =>
        h.store.renew({ leaseId: l.leaseId, fencingToken: l.fencingToken, ttlMs: 30_000, workerId: "sdk", honorsTtl });
      expect(await renew(false)).toEqual({ kind: "lost", reason: "REVOKED" });
      h.clock.advance(1_000);
      expect(await renew(true)).toEqual({ kind: "renewed", expireAt: from, ttlMs: FROM_MS - 1_000 });
      // in the last half second: not extended (it runs out at `from`)
      h.clock.advance(2_600);
      expect(await renew(true)).toEqual({ kind: "lost", reason: "REVOKED" });
      expect(await deny(h, acq({ workerId: "silent", proxyId: ids[0]! }))).toBeGreaterThan(0);
      h.clock.advance(400);
      expect((await grant(h, acq({ workerId: "silent", proxyId: ids[0]! }))).proxy.id).toBe(ids[0]);
    });

    it("a domain-key reserved whole: granted until then, and not recorded as the caller's use", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      const from = h.clock.now() + FROM_MS;
      await h.store.reserve("default", { proxies: {}, domains: { "shop.example.com": "silent" }, from: { silent: from } });
      expect(await deny(h, acq({ workerId: "stub", domainKey: "shop.example.com" }))).toBe(-1);
      const l = await grant(h, acq({ workerId: "sdk", domainKey: "shop.example.com", honorsTtl: true, domainUseMs: 60_000 }));
      expect(l.expireAt).toBe(from);
      expect(await h.store.domainUses("default", h.clock.now() - 60_000)).toEqual([]);
    });

    it("a pair reserved twice runs to the earlier moment", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 1);
      const now = h.clock.now();
      await h.store.reserve("default", {
        proxies: { [ids[0]!]: "a" },
        domains: { "shop.example.com": "b" },
        from: { a: now + FROM_MS, b: now + 2_500 },
      });
      const l = await grant(h, acq({ workerId: "sdk", domainKey: "shop.example.com", honorsTtl: true }));
      expect(l.expireAt).toBe(now + 2_500);
      // the TTL noted as the longest granted lately is the one granted
      expect((await h.store.holdState("default")).longestTtlMs).toBe(2_500);
    });
  });
}
