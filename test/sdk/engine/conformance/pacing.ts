/**
 * Internal to the conformance suite: G2 pacing and cool-downs, G6 retryAfter of denials, G7
 * load spread.
 */
import { describe, expect, it } from "vitest";
import { rateLimitBackoffMs } from "@proxybroker/sdk/model";
import {
  acq,
  addProxies,
  allProxies,
  deny,
  grant,
  openStore,
  release,
  TTL,
  type StoreFactory,
  type ConformanceOptions,
  poolWide,
} from "./harness.js";

export function pacingSuite(factory: StoreFactory, options: ConformanceOptions = {}): void {
  describe("G2 pacing", () => {
    it("a second grant of the pair comes no earlier than minInterval after the first", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const paced = acq({ minIntervalMs: 5_000 });
      const first = await grant(h, paced);
      await release(h, first);
      expect(await deny(h, paced)).toBe(5_000);
      h.clock.advance(4_999);
      expect(await deny(h, paced)).toBe(1);
      h.clock.advance(1);
      expect((await grant(h, paced)).proxy.id).toBe(first.proxy.id);
      // pacing is per domain-key: another site may use the proxy right away
      expect((await grant(h, acq({ domainKey: "other.example", minIntervalMs: 5_000 }))).proxy.id).toBe(first.proxy.id);
    });

    it("pacing holds below maxConcurrency, and a denial waits for the later of pacing and capacity", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const paced = acq({ minIntervalMs: 5_000, maxConcurrency: 2 });
      const start = h.clock.now();
      await grant(h, paced);
      expect(await deny(h, paced)).toBe(5_000);
      h.clock.advance(5_000);
      await grant(h, paced);
      // two holders: the cap holds until the first expires at start + TTL, and the release anchor
      // adds the interval after that end
      expect(await deny(h, paced)).toBe(start + TTL + 5_000 - h.clock.now());
      // anchored at grants only, the cap alone decides
      const g = await openStore(factory);
      await addProxies(g, 1);
      const byGrant = acq({ minIntervalMs: 5_000, maxConcurrency: 2, pacing: "grant" });
      const gStart = g.clock.now();
      await grant(g, byGrant);
      g.clock.advance(5_000);
      await grant(g, byGrant);
      expect(await deny(g, byGrant)).toBe(gStart + TTL - g.clock.now());
    });

    it("release anchor (the default): the next grant comes minInterval after the release", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const paced = acq({ minIntervalMs: 5_000 });
      const first = await grant(h, paced);
      h.clock.advance(3_000); // a slow page: the response arrives 3 s after the grant
      await release(h, first);
      expect(await deny(h, paced)).toBe(5_000);
      h.clock.advance(4_999);
      expect(await deny(h, paced)).toBe(1);
      h.clock.advance(1);
      await grant(h, paced);
    });

    it("release anchor: a held lease blocks until its expiry + minInterval; an expired one paces from its expiry", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const paced = acq({ minIntervalMs: 5_000, ttlMs: 10_000 });
      const start = h.clock.now();
      const lease = await grant(h, paced);
      expect(await deny(h, paced)).toBe(15_000);
      h.clock.advance(10_000); // expired, never released
      expect(await deny(h, paced)).toBe(5_000);
      h.clock.advance(4_999);
      expect(await deny(h, paced)).toBe(1);
      // a late release anchors at its own time: the request may have run until now
      await release(h, lease);
      expect(await deny(h, paced)).toBe(5_000);
      h.clock.advance(5_000);
      expect((await grant(h, paced)).fencingToken).toBeGreaterThan(lease.fencingToken);
      expect(h.clock.now() - start).toBe(19_999);
    });

    it("grant anchor: only grant-to-grant spacing", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const paced = acq({ minIntervalMs: 5_000, pacing: "grant" });
      const first = await grant(h, paced);
      h.clock.advance(3_000);
      await release(h, first);
      expect(await deny(h, paced)).toBe(2_000);
      h.clock.advance(2_000);
      await grant(h, paced);
    });

    it("jitter adds between 0 and jitterMs to each grant's interval, and not always the same", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const paced = acq({ minIntervalMs: 1_000, jitterMs: 500 });
      const waits = new Set<number>();
      for (let i = 0; i < 40; i++) {
        await release(h, await grant(h, paced));
        const wait = await deny(h, paced);
        expect(wait).toBeGreaterThanOrEqual(1_000);
        expect(wait).toBeLessThanOrEqual(1_500);
        waits.add(wait);
        h.clock.advance(wait);
      }
      expect(waits.size, "jitter never varied").toBeGreaterThan(10);
    });

    it("RATE_LIMITED with retryAfterMs pushes the next grant past it", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const lease = await grant(h);
      await release(h, lease, "RATE_LIMITED", { httpStatus: 429, retryAfterMs: 20_000 });
      expect(await deny(h)).toBe(20_000);
      h.clock.advance(19_999);
      expect(await deny(h)).toBe(1);
      h.clock.advance(1);
      const again = await grant(h);
      // the consecutive count went up with the explicit retry-after too: the next one is the 2nd
      await release(h, again, "RATE_LIMITED", { httpStatus: 429 });
      expect(await deny(h)).toBe(rateLimitBackoffMs(h.scoring, 2));
    });

    it("a release with an absurd retryAfterMs or latency applies whole: scored, cooled, the proxy usable elsewhere", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const lease = await grant(h);
      const r = await release(h, lease, "RATE_LIMITED", { httpStatus: 429, retryAfterMs: 1e20, latencyMs: 1e300 });
      expect(r).toEqual({ kind: "released" });
      const view = (await allProxies(h)).find((p) => p.id === id);
      expect(view?.score).toBe(h.scoring.initialScore + h.scoring.delta.RATE_LIMITED);
      expect(view?.failureCount).toBe(1);
      expect(Number.isFinite(view?.latencyEwmaMs)).toBe(true);
      const wait = await deny(h);
      expect(wait).toBeGreaterThan(365 * 86_400_000);
      expect(Number.isFinite(wait)).toBe(true);
      expect(await release(h, lease)).toEqual({ kind: "released" });
      await grant(h, acq({ domainKey: "other.example" }));
    });

    it("RATE_LIMITED without retryAfterMs backs off exponentially; SUCCESS resets the count", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const expected = [1, 2, 3, 4].map((n) => rateLimitBackoffMs(h.scoring, n));
      expect(expected).toEqual([1_000, 2_000, 4_000, 8_000]);
      for (const backoff of expected) {
        const lease = await grant(h);
        await release(h, lease, "RATE_LIMITED", { httpStatus: 429 });
        expect(await deny(h)).toBe(backoff);
        h.clock.advance(backoff);
      }
      await release(h, await grant(h), "SUCCESS");
      await release(h, await grant(h), "RATE_LIMITED", { httpStatus: 429 });
      expect(await deny(h)).toBe(expected[0]);
      // the cool-down is per domain-key
      await grant(h, acq({ domainKey: "other.example" }));
    });
  });

  describe("G6 denial retryAfterMs", () => {
    it("is the earliest moment a busy proxy frees up", async () => {
      const h = await openStore(factory);
      await addProxies(h, 3);
      const start = h.clock.now();
      await grant(h, acq({ ttlMs: 30_000 }));
      h.clock.advance(1_000);
      await grant(h, acq({ ttlMs: 10_000 }));
      h.clock.advance(1_000);
      await grant(h, acq({ ttlMs: 60_000 }));
      expect(await deny(h)).toBe(start + 11_000 - h.clock.now());
      h.clock.advance(8_999);
      expect(await deny(h)).toBe(1);
      h.clock.advance(1);
      await grant(h);
    });

    it("is -1 on an empty pool and when no proxy matches the labels", async () => {
      const h = await openStore(factory);
      expect(await deny(h)).toBe(-1);
      expect(await deny(h, acq({ pool: "never-used" }))).toBe(-1);
      await addProxies(h, 3, { labels: { country: "de" } });
      expect(await deny(h, acq({ labels: { country: "fr" } }))).toBe(-1);
    });
  });

  describe("G7 load spread", () => {
    it("spreads acquire→release(SUCCESS) cycles over many proxies of a 100-proxy pool", async () => {
      const h = await openStore(factory);
      await addProxies(h, 100);
      const used = new Set<string>();
      for (let i = 0; i < 200; i++) {
        const lease = await grant(h);
        used.add(lease.proxy.id);
        await release(h, lease, "SUCCESS");
        h.clock.advance(100);
      }
      expect(used.size).toBeGreaterThanOrEqual(10);
    });

    if (poolWide(options)) {
      it("chooses only from the top score band while it has free members, and spreads inside it", async () => {
        const h = await openStore(factory);
        const ids = await addProxies(h, 100);
        // 16 (the minimum band) proxies in the middle of the id order get a higher score
        const top = ids.slice(50, 66);
        for (const id of top) await h.store.recordHealth("default", id, "pass");
        const used = new Map<string, number>();
        for (let i = 0; i < 160; i++) {
          const lease = await grant(h);
          used.set(lease.proxy.id, (used.get(lease.proxy.id) ?? 0) + 1);
          await release(h, lease, "TARGET_ERROR");
          h.clock.advance(100);
        }
        const outside = [...used.keys()].filter((id) => !top.includes(id));
        expect(outside, "proxies chosen outside the top band").toEqual([]);
        expect(used.size).toBeGreaterThanOrEqual(10);
        expect(Math.max(...used.values()), "one proxy took most of the load").toBeLessThanOrEqual(40);
      });
    }
  });
}
