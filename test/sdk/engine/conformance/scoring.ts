/**
 * Internal to the conformance suite: §2 scoring, bans, quarantine, blacklist, health checks.
 */
import { describe, expect, it } from "vitest";
import type { LeaseView } from "@proxybroker/sdk/model";
import { quarantineLengthMs, type ScoringConfig } from "@proxybroker/sdk/model";
import { acq, addProxies, deny, grant, openStore, proxyView, release, type Harness, type StoreFactory } from "./harness.js";

/** Small numbers: one PROXY_ERROR (20 → 5) drops a proxy below the floor (10). */
const FRAGILE: Partial<ScoringConfig> = {
  initialScore: 20,
  scoreAfterQuarantine: 20,
  quarantineBaseMs: 100_000,
  quarantineMaxMs: 350_000,
  quarantineJitter: 0.1,
  maxQuarantines: 3,
};

/** Release `lease` with PROXY_ERROR and return the proxy's quarantine length from now. */
async function fall(h: Harness, lease: LeaseView): Promise<number> {
  expect(await release(h, lease, "PROXY_ERROR")).toMatchObject({ kind: "released" });
  const view = await proxyView(h, lease.proxy.id);
  expect(view.state).toBe("QUARANTINED");
  return view.quarantineUntil - h.clock.now();
}

export function scoringSuite(factory: StoreFactory): void {
  describe("§2 scoring", () => {
    it("SUCCESS adds 2 up to 100; grants record the worker and time", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const first = await grant(h, acq({ workerId: "crawler-7" }));
      expect(first.proxy).toMatchObject({ id, state: "ACTIVE", score: 50, lastUsedBy: "crawler-7", lastUsedAt: h.clock.now() });
      await release(h, first, "SUCCESS");
      expect(await proxyView(h, id!)).toMatchObject({ score: 52, successCount: 1, failureCount: 0 });
      for (let i = 0; i < 30; i++) {
        h.clock.advance(1_000);
        await release(h, await grant(h), "SUCCESS");
      }
      expect(await proxyView(h, id!)).toMatchObject({ score: 100, successCount: 31 });
    });

    it("PROXY_ERROR −15, RATE_LIMITED and BLOCKED −5 count failures; TARGET_ERROR and ABANDONED change nothing", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const steps = [
        ["PROXY_ERROR", 35, 1],
        ["TARGET_ERROR", 35, 1],
        ["ABANDONED", 35, 1],
        ["RATE_LIMITED", 30, 2],
        ["BLOCKED", 25, 3],
      ] as const;
      for (const [kind, score, failures] of steps) {
        // a fresh domain-key each time so that cool-downs and bans do not get in the way
        await release(h, await grant(h, acq({ domainKey: `${kind.toLowerCase()}.example` })), kind);
        expect(await proxyView(h, id!), kind).toMatchObject({ score, failureCount: failures, successCount: 0 });
      }
    });

    it("latency samples feed an EWMA", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      await release(h, await grant(h), "SUCCESS", { latencyMs: 100 });
      expect((await proxyView(h, id!)).latencyEwmaMs).toBeCloseTo(100, 6);
      await release(h, await grant(h), "SUCCESS", { latencyMs: 200 });
      expect((await proxyView(h, id!)).latencyEwmaMs).toBeCloseTo(100 + h.scoring.ewmaAlpha * 100, 6);
      await release(h, await grant(h), "TARGET_ERROR");
      expect((await proxyView(h, id!)).latencyEwmaMs).toBeCloseTo(100 + h.scoring.ewmaAlpha * 100, 6);
    });

    it("BLOCKED bans the pair for banTtlMs; other domain-keys keep the proxy; the ban ends by itself", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const banned = acq({ banTtlMs: 60_000 });
      await release(h, await grant(h, banned), "BLOCKED", { httpStatus: 403 });
      expect(await deny(h, banned)).toBe(60_000);
      const other = await grant(h, acq({ domainKey: "other.example" }));
      expect(other.proxy.id).toBe(id);
      await release(h, other, "SUCCESS");
      h.clock.advance(59_999);
      expect(await deny(h, banned)).toBe(1);
      h.clock.advance(1);
      expect((await grant(h, banned)).proxy.id).toBe(id);
    });

    it("below the floor: QUARANTINED for base·(1±jitter), back by itself, the next one doubles, then BLACKLISTED", async () => {
      const h = await openStore(factory, { scoring: FRAGILE });
      const [id] = await addProxies(h, 1);
      const base = FRAGILE.quarantineBaseMs!;
      const ranges: Array<[number, number]> = [
        [base * 0.9, base * 1.1],
        [2 * base * 0.9, 2 * base * 1.1],
        [FRAGILE.quarantineMaxMs! * 0.9, FRAGILE.quarantineMaxMs!], // 4·base capped at the maximum
      ];
      let lease = await grant(h);
      for (const [n, [lo, hi]] of ranges.entries()) {
        const length = await fall(h, lease);
        expect(length, `quarantine ${n + 1}`).toBeGreaterThanOrEqual(lo);
        expect(length, `quarantine ${n + 1}`).toBeLessThanOrEqual(hi);
        expect(await proxyView(h, id!)).toMatchObject({ score: 5, quarantineCount: n + 1 });
        // the pool's only proxy is out: the denial points at its return
        expect(await deny(h, acq({ workerId: "worker-2" }))).toBe(length);
        h.clock.advance(length - 1);
        expect(await deny(h, acq({ workerId: "worker-2" }))).toBe(1);
        h.clock.advance(1);
        lease = await grant(h);
        expect(lease.proxy).toMatchObject({ state: "ACTIVE", score: 20, quarantineCount: n + 1, quarantineUntil: 0 });
      }
      expect(await release(h, lease, "PROXY_ERROR")).toMatchObject({ kind: "released" });
      expect(await proxyView(h, id!)).toMatchObject({ state: "BLACKLISTED" });
      expect(await deny(h)).toBe(-1);
      h.clock.advance(7 * 86_400_000);
      expect(await deny(h)).toBe(-1);
      expect((await proxyView(h, id!)).state).toBe("BLACKLISTED");
      expect(await h.store.restoreProxies("default", [id!, "10.9.9.9:1"])).toEqual({
        restored: [id],
        notFound: ["10.9.9.9:1"],
      });
      expect(await proxyView(h, id!)).toMatchObject({ state: "ACTIVE", score: 20, quarantineCount: 0 });
      await grant(h);
    });

    it("the quarantine jitter is drawn from the store's random source", async () => {
      for (const u of [0, 0.5]) {
        const h = await openStore(factory, { scoring: FRAGILE, random: () => u });
        await addProxies(h, 1);
        expect(await fall(h, await grant(h)), `random() = ${u}`).toBe(quarantineLengthMs(h.scoring, 1, u));
      }
    });

    it("restoreProxies ends a quarantine at once and resets the count", async () => {
      const h = await openStore(factory, { scoring: FRAGILE });
      const [id, other] = await addProxies(h, 2);
      const restoreOf = await h.store.restoreProxies("default", [other!]);
      expect(restoreOf).toEqual({ restored: [other], notFound: [] });
      await h.store.removeProxies("default", [other!]);
      await fall(h, await grant(h));
      expect(await h.store.restoreProxies("default", [id!])).toEqual({ restored: [id], notFound: [] });
      expect(await proxyView(h, id!)).toMatchObject({ state: "ACTIVE", score: 20, quarantineCount: 0, quarantineUntil: 0 });
      expect((await grant(h)).proxy.id).toBe(id);
    });
  });

  describe("§2 health checks", () => {
    it("pass +3, fail −10, error ×0.7; unknown proxy → undefined", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      expect((await h.store.recordHealth("default", id!, "pass"))?.score).toBeCloseTo(53, 6);
      expect((await h.store.recordHealth("default", id!, "fail"))?.score).toBeCloseTo(43, 6);
      expect((await h.store.recordHealth("default", id!, "error"))?.score).toBeCloseTo(43 * 0.7, 6);
      expect((await proxyView(h, id!)).score).toBeCloseTo(43 * 0.7, 6);
      expect(await h.store.recordHealth("default", "10.9.9.9:1", "pass")).toBeUndefined();
    });

    it("failing checks quarantine an ACTIVE proxy; a pass ends the quarantine early", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      let view = await h.store.recordHealth("default", id!, "fail"); // 40
      for (let i = 0; i < 3; i++) view = await h.store.recordHealth("default", id!, "fail"); // 30, 20, 10
      expect(view).toMatchObject({ state: "ACTIVE", score: 10 }); // the floor itself is not below it
      view = await h.store.recordHealth("default", id!, "fail"); // 0
      expect(view).toMatchObject({ state: "QUARANTINED", score: 0, quarantineCount: 1 });
      expect(await deny(h)).toBe(view!.quarantineUntil - h.clock.now());
      // checks on a quarantined proxy that fail do not quarantine it again
      view = await h.store.recordHealth("default", id!, "fail");
      expect(view).toMatchObject({ state: "QUARANTINED", quarantineCount: 1 });
      h.clock.advance(1_000);
      view = await h.store.recordHealth("default", id!, "pass");
      expect(view).toMatchObject({ state: "ACTIVE", score: h.scoring.scoreAfterQuarantine, quarantineUntil: 0 });
      expect((await grant(h)).proxy.id).toBe(id);
    });
  });
}
