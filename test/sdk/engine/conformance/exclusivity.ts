/**
 * Internal to the conformance suite: G1 exclusivity per (proxy, domain-key).
 */
import { describe, expect, it } from "vitest";
import type { AcquireResult, LeaseView } from "@proxybroker/sdk/model";
import { acq, addProxies, deny, grant, openStore, release, TTL, type StoreFactory } from "./harness.js";

function grants(results: readonly AcquireResult[]): LeaseView[] {
  return results.flatMap((r) => (r.kind === "granted" ? [r.lease] : []));
}

function countBy<T>(items: readonly T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of items) m.set(key(t), (m.get(key(t)) ?? 0) + 1);
  return m;
}

export function exclusivitySuite(factory: StoreFactory): void {
  describe("G1 exclusivity", () => {
    it("50 concurrent acquires over 5 proxies grant exactly 5 distinct proxies, round after round", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 5);
      let held: LeaseView[] = [];
      for (let round = 0; round < 4; round++) {
        const results = await Promise.all(Array.from({ length: 50 }, (_, i) => h.store.acquire(acq({ workerId: `w${i}` }))));
        const got = grants(results);
        expect(got, `round ${round}`).toHaveLength(5);
        expect(new Set(got.map((l) => l.proxy.id))).toEqual(new Set(ids));
        for (const r of results) {
          if (r.kind === "denied") expect(r.retryAfterMs, `round ${round}`).toBe(TTL);
          else expect(r.kind).toBe("granted");
        }
        held = got;
        const released = await Promise.all(held.map((l, i) => release(h, l, i % 2 === 0 ? "SUCCESS" : "TARGET_ERROR")));
        expect(released.map((r) => r.kind)).toEqual(Array(5).fill("released"));
        h.clock.advance(10);
      }
    });

    it("a partial release frees exactly the released proxies", async () => {
      const h = await openStore(factory);
      await addProxies(h, 5);
      const first = grants(await Promise.all(Array.from({ length: 50 }, () => h.store.acquire(acq()))));
      expect(first).toHaveLength(5);
      const [a, b, ...kept] = first as [LeaseView, LeaseView, ...LeaseView[]];
      await release(h, a);
      await release(h, b);
      const second = grants(await Promise.all(Array.from({ length: 50 }, () => h.store.acquire(acq()))));
      expect(second.map((l) => l.proxy.id).sort()).toEqual([a.proxy.id, b.proxy.id].sort());
      const live = [...kept, ...second].map((l) => l.proxy.id);
      expect(new Set(live).size).toBe(live.length);
    });

    it("maxConcurrency 2 allows at most 2 live leases per (proxy, domain-key)", async () => {
      const h = await openStore(factory);
      await addProxies(h, 5);
      for (let round = 0; round < 3; round++) {
        const got = grants(await Promise.all(Array.from({ length: 50 }, () => h.store.acquire(acq({ maxConcurrency: 2 })))));
        expect(got, `round ${round}`).toHaveLength(10);
        for (const [id, n] of countBy(got, (l) => l.proxy.id)) expect(n, `${id} in round ${round}`).toBe(2);
        expect(new Set(got.map((l) => l.leaseId)).size).toBe(10);
        await Promise.all(got.map((l) => release(h, l)));
      }
    });

    it("live holders count against the maxConcurrency of each acquire", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      await grant(h, acq({ maxConcurrency: 3 }));
      await grant(h, acq({ maxConcurrency: 3 }));
      // the domain's limit was lowered since: two live holders already exceed it
      await deny(h, acq({ maxConcurrency: 2 }));
      await deny(h, acq({ maxConcurrency: 1 }));
      await grant(h, acq({ maxConcurrency: 3 }));
      await deny(h, acq({ maxConcurrency: 3 }));
    });

    it("different domain-keys share a proxy, each exclusively", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 5);
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => h.store.acquire(acq({ domainKey: `site${i % 3}.example` }))));
      const got = grants(results);
      expect(got).toHaveLength(15);
      for (const [key, n] of countBy(got, (l) => `${l.domainKey} ${l.proxy.id}`)) expect(n, key).toBe(1);
      for (const [domain, n] of countBy(got, (l) => l.domainKey)) expect(n, domain).toBe(ids.length);
    });

    it("every proxy of a 100-proxy pool can be leased at once for one domain-key", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 100);
      const got: LeaseView[] = [];
      for (let i = 0; i < 100; i++) got.push(await grant(h, acq({ workerId: `w${i}` })));
      expect(new Set(got.map((l) => l.proxy.id))).toEqual(new Set(ids));
      expect(await deny(h)).toBe(TTL);
    });

    it("lease ids are distinct and long enough to hold 128 random bits", async () => {
      const h = await openStore(factory);
      await addProxies(h, 3);
      const seen = new Set<string>();
      for (let i = 0; i < 60; i++) {
        const lease = await grant(h);
        expect(lease.leaseId.length).toBeGreaterThanOrEqual(22);
        seen.add(lease.leaseId);
        await release(h, lease, "TARGET_ERROR");
      }
      expect(seen.size).toBe(60);
    });
  });
}
