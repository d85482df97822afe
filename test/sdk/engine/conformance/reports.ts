/**
 * Internal to the conformance suite: `reportOutcomes`, outcomes observed without a lease (an SDK's
 * fallback pool replaying them), applied like a release's outcome.
 */
import { describe, expect, it } from "vitest";
import type { OutcomeKindName, OutcomeReport } from "@proxybroker/sdk/model";
import {
  acq,
  addProxies,
  BAN_TTL,
  DOMAIN,
  deny,
  grant,
  openStore,
  outcome,
  POOL,
  proxyView,
  release,
  type StoreFactory,
} from "./harness.js";

/** A report of `kind` for (id, domainKey). */
function report(id: string, kind: OutcomeKindName, over: Partial<OutcomeReport> = {}): OutcomeReport {
  return { proxyId: id, domainKey: DOMAIN, outcome: outcome(kind), banTtlMs: BAN_TTL, ...over };
}

export function reportSuite(factory: StoreFactory): void {
  describe("§7 reported outcomes", () => {
    it("a reported BLOCKED bans the pair for the report's banTtlMs; other domain-keys keep the proxy", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      expect(await h.store.reportOutcomes(POOL, [report(id!, "BLOCKED", { banTtlMs: 60_000 })])).toBe(1);
      expect(await proxyView(h, id!)).toMatchObject({ score: 45, failureCount: 1 });
      expect(await deny(h)).toBe(60_000);
      const other = await grant(h, acq({ domainKey: "other.example" }));
      expect(other.proxy.id).toBe(id);
      await release(h, other, "SUCCESS");
      h.clock.advance(59_999);
      expect(await deny(h)).toBe(1);
      h.clock.advance(1);
      expect((await grant(h)).proxy.id).toBe(id);
    });

    it("a reported BLOCKED on a held pair bans it after the holder leaves", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const lease = await grant(h);
      expect(await h.store.reportOutcomes(POOL, [report(id!, "BLOCKED", { banTtlMs: 120_000 })])).toBe(1);
      await release(h, lease, "TARGET_ERROR");
      expect(await deny(h)).toBe(120_000);
    });

    it("reported PROXY_ERRORs lower a score to the floor at most: reports alone never quarantine; a lease's outcome then does", async () => {
      const h = await openStore(factory);
      const [id, spare] = await addProxies(h, 2);
      // 50 → 35 → 20 → 10 (not 5: a report stops at the floor), however many follow
      const batch = Array.from({ length: 40 }, (_, i) => report(id!, "PROXY_ERROR", { domainKey: `r${i % 3}.example` }));
      expect(await h.store.reportOutcomes(POOL, batch)).toBe(40);
      expect(await proxyView(h, id!)).toMatchObject({ state: "ACTIVE", score: 10, failureCount: 40, quarantineCount: 0 });
      // first-hand evidence: a broker lease's PROXY_ERROR takes it below the floor
      let lease = await grant(h, acq({ domainKey: "d.example", proxyId: id! }));
      await release(h, lease, "PROXY_ERROR");
      const view = await proxyView(h, id!);
      expect(view).toMatchObject({ state: "QUARANTINED", score: 0, quarantineCount: 1 });
      expect(view.quarantineUntil).toBeGreaterThan(h.clock.now());
      lease = await grant(h, acq({ domainKey: "e.example" }));
      expect(lease.proxy.id).toBe(spare);
    });

    it("unknown proxies are skipped and not counted; SUCCESS adds +2 and counts a success", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const applied = await h.store.reportOutcomes(POOL, [
        report("10.9.9.9:1", "PROXY_ERROR"),
        report(id!, "SUCCESS", { outcome: outcome("SUCCESS", { latencyMs: 80 }) }),
        report("10.9.9.9:2", "BLOCKED"),
      ]);
      expect(applied).toBe(1);
      expect(await proxyView(h, id!)).toMatchObject({ score: 52, successCount: 1, failureCount: 0 });
      expect((await proxyView(h, id!)).latencyEwmaMs).toBeCloseTo(80, 6);
      expect(await h.store.reportOutcomes(POOL, [report("10.9.9.9:1", "SUCCESS")])).toBe(0);
      expect(await h.store.reportOutcomes("elsewhere", [report(id!, "SUCCESS")])).toBe(0);
      expect(await h.store.reportOutcomes(POOL, [])).toBe(0);
      await grant(h);
    });

    it("a large batch is applied completely (250 SUCCESS reports → score capped at 100)", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const batch = Array.from({ length: 250 }, () => report(id!, "SUCCESS"));
      expect(await h.store.reportOutcomes(POOL, batch)).toBe(250);
      expect(await proxyView(h, id!)).toMatchObject({ score: 100, successCount: 250 });
    });

    it("a reported RATE_LIMITED with retryAfter cools the pair down", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const r = report(id!, "RATE_LIMITED", { outcome: outcome("RATE_LIMITED", { retryAfterMs: 7_000 }) });
      expect(await h.store.reportOutcomes(POOL, [r])).toBe(1);
      expect(await deny(h)).toBe(7_000);
      h.clock.advance(7_000);
      await grant(h);
    });
  });
}
