/**
 * Internal to the conformance suite: step pickCandidate (choose) never denies while an eligible proxy exists
 * in a band the scan reads whole (up to 1,024 entries), even when most of the pool is busy for
 * the domain-key and the free proxies cluster at the top of the index.
 */
import { describe, expect, it } from "vitest";
import type { LeaseView } from "@proxybroker/sdk/model";
import {
  acq,
  addProxies,
  allProxies,
  deny,
  grant,
  openStore,
  proxySpec,
  release,
  TTL,
  type Harness,
  type StoreFactory,
  type ConformanceOptions,
  poolWide,
} from "./harness.js";

const POOL_SIZE = 1_000;

/** Lease every proxy of the pool for the test domain, one acquire each (each must be granted). */
async function leaseAll(h: Harness): Promise<LeaseView[]> {
  const held: LeaseView[] = [];
  for (let i = 0; i < POOL_SIZE; i++) held.push(await grant(h, acq({ workerId: `w${i % 50}` })));
  expect(new Set(held.map((l) => l.proxy.id)).size).toBe(POOL_SIZE);
  return held;
}

/** Release `free` leases spread over the pool with SUCCESS (+2: they move to the top of the index). */
async function freeSome(h: Harness, held: LeaseView[], free: number): Promise<Set<string>> {
  const step = Math.floor(held.length / free);
  const freed = new Set<string>();
  for (let i = 0; i < free; i++) {
    const lease = held[i * step]!;
    expect(await release(h, lease, "SUCCESS")).toMatchObject({ kind: "released" });
    freed.add(lease.proxy.id);
  }
  return freed;
}

/** Acquire `count` times; every one must be granted one of `freed`. */
async function takeAll(h: Harness, freed: Set<string>, count: number): Promise<void> {
  const got = new Set<string>();
  for (let i = 0; i < count; i++) {
    const lease = await grant(h, acq({ workerId: `late-${i}` }));
    expect(freed.has(lease.proxy.id), `grant ${i}: ${lease.proxy.id} was not free`).toBe(true);
    got.add(lease.proxy.id);
  }
  expect(got.size).toBe(count);
}

export function selectionSuite(factory: StoreFactory, options: ConformanceOptions = {}): void {
  describe("step pickCandidate: selection in a mostly busy pool", () => {
    it("filling a 1,000-proxy pool: every acquire is granted up to the last proxy, then denied", async () => {
      const h = await openStore(factory);
      await addProxies(h, POOL_SIZE);
      await leaseAll(h);
      expect(await deny(h)).toBe(TTL);
    });

    it("900 of 1,000 busy for one domain-key: each of the remaining 100 acquires is granted", async () => {
      const h = await openStore(factory);
      await addProxies(h, POOL_SIZE);
      const held = await leaseAll(h);
      await takeAll(h, await freeSome(h, held, 100), 100);
      expect(await deny(h)).toBe(TTL);
    });

    it("990 of 1,000 busy for one domain-key: the last 10 acquires are granted", async () => {
      const h = await openStore(factory);
      await addProxies(h, POOL_SIZE);
      const held = await leaseAll(h);
      await takeAll(h, await freeSome(h, held, 10), 10);
      expect(await deny(h)).toBe(TTL);
      // other domain-keys see the whole pool free
      await grant(h, acq({ domainKey: "other.example" }));
    });
  });

  describe("step pickCandidate: selection with a tier or label filter", () => {
    if (poolWide(options)) {
      it("grants a label whenever a matching proxy is free, wherever it sits in the score order", async () => {
        const h = await openStore(factory);
        const specs = Array.from({ length: 5_000 }, (_, i) =>
          proxySpec(i, i % 100 === 7 ? { labels: { country: "de" }, tier: "residential" } : {}),
        );
        await h.store.addProxies("default", specs);
        const de = specs.filter((s) => s.labels["country"] === "de").map((s) => s.id);
        expect(de).toHaveLength(50);
        // the 50 `country=de` proxies score lowest of the pool
        for (const id of de) await h.store.recordHealth("default", id, "fail");
        // the best 1,000 others are busy for the domain-key
        for (let i = 0; i < 1_000; i++) await grant(h, acq({ workerId: `w${i % 50}` }));
        const got = new Set<string>();
        for (let i = 0; i < 50; i++) {
          const p = i % 2 === 0 ? acq({ labels: { country: "de" } }) : acq({ labels: { country: "de" }, tier: "residential" });
          const lease = await grant(h, p);
          expect(lease.proxy.labels).toEqual({ country: "de" });
          got.add(lease.proxy.id);
        }
        expect(got.size).toBe(50);
        expect(await deny(h, acq({ labels: { country: "de" } }))).toBe(TTL);
        // a label nobody has, or a tier that does not carry it, is denied without a retry moment
        expect(await deny(h, acq({ labels: { country: "it" } }))).toBe(-1);
        expect(await deny(h, acq({ labels: { country: "de" }, tier: "datacenter" }))).toBeGreaterThan(0);
      });
    }

    it("keeps the label index right through quarantine, restore, relabel and removal", async () => {
      const h = await openStore(factory);
      await h.store.addProxies("default", [proxySpec(0, { labels: { country: "de" } }), proxySpec(1)]);
      const de = proxySpec(0).id;
      expect((await grant(h, acq({ labels: { country: "de" }, domainKey: "a.example" }))).proxy.id).toBe(de);
      // quarantined: out of the index
      for (let i = 0; i < 5; i++) await h.store.recordHealth("default", de, "fail");
      expect((await allProxies(h)).find((p) => p.id === de)?.state).toBe("QUARANTINED");
      expect(await deny(h, acq({ labels: { country: "de" }, domainKey: "b.example" }))).toBeGreaterThanOrEqual(0);
      await h.store.restoreProxies("default", [de]);
      expect((await grant(h, acq({ labels: { country: "de" }, domainKey: "b.example" }))).proxy.id).toBe(de);
      // relabelled: found under the new label only
      await h.store.addProxies("default", [proxySpec(0, { labels: { country: "fr" } })]);
      expect(await deny(h, acq({ labels: { country: "de" }, domainKey: "c.example" }))).toBe(-1);
      expect((await grant(h, acq({ labels: { country: "fr" }, domainKey: "c.example" }))).proxy.id).toBe(de);
      await h.store.removeProxies("default", [de]);
      expect(await deny(h, acq({ labels: { country: "fr" }, domainKey: "d.example" }))).toBe(-1);
    });
  });
}
