/**
 * Internal to the conformance suite: step 6 (choose) never denies while an eligible proxy exists
 * in a band the scan reads whole (up to 1,024 entries), even when most of the pool is busy for
 * the domain-key and the free proxies cluster at the top of the index.
 */
import { describe, expect, it } from "vitest";
import type { LeaseView } from "@proxybroker/sdk/model";
import { acq, addProxies, deny, grant, openStore, release, TTL, type Harness, type StoreFactory } from "./harness.js";

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

export function selectionSuite(factory: StoreFactory): void {
  describe("step 6 selection in a mostly busy pool", () => {
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
}
