/**
 * Internal to the conformance suite: `reportOutcomes`, outcomes observed without a lease (an SDK's
 * fallback pool replaying them), applied like a release's outcome — only when claimed or on a
 * pair the reporter holds or held lately — with cool-downs and bans cut to the reports' caps.
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
  type Harness,
  openStore,
  outcome,
  POOL,
  proxyView,
  release,
  renew,
  type StoreFactory,
  TTL,
} from "./harness.js";

/** A claimed report (the broker found it in the reporter's fallback claim) of `kind` for (id, domainKey). */
function report(id: string, kind: OutcomeKindName, over: Partial<OutcomeReport> = {}): OutcomeReport {
  return { proxyId: id, domainKey: DOMAIN, outcome: outcome(kind), banTtlMs: BAN_TTL, claimed: true, ...over };
}

/** The same report without a claim: it applies only on a pair the reporter held. */
function unclaimed(id: string, kind: OutcomeKindName, over: Partial<OutcomeReport> = {}): OutcomeReport {
  return report(id, kind, { claimed: false, ...over });
}

/** The reporter of the tests (the worker of `acq()`). */
const W = "worker-1";
/** How long after a lease's expiry its worker's reports apply, in the tests. */
const REPORTABLE = 60_000;

/** `reportOutcomes` by W, answering how many were applied. */
async function applied(h: Harness, reports: readonly OutcomeReport[], pool: string = POOL): Promise<number> {
  return (await h.store.reportOutcomes(pool, reports, W)).applied;
}

export function reportSuite(factory: StoreFactory): void {
  describe("§7 reported outcomes", () => {
    it("a reported BLOCKED bans the pair for the report's banTtlMs; other domain-keys keep the proxy", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      expect(await applied(h, [report(id!, "BLOCKED", { banTtlMs: 60_000 })])).toBe(1);
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
      expect(await applied(h, [report(id!, "BLOCKED", { banTtlMs: 120_000 })])).toBe(1);
      await release(h, lease, "TARGET_ERROR");
      expect(await deny(h)).toBe(120_000);
    });

    it("reported PROXY_ERRORs lower a score to the floor at most: reports alone never quarantine; a lease's outcome then does", async () => {
      const h = await openStore(factory);
      const [id, spare] = await addProxies(h, 2);
      // 50 → 35 → 20 → 10 (not 5: a report stops at the floor), however many follow
      const batch = Array.from({ length: 40 }, (_, i) => report(id!, "PROXY_ERROR", { domainKey: `r${i % 3}.example` }));
      expect(await applied(h, batch)).toBe(40);
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
      const done = await h.store.reportOutcomes(
        POOL,
        [
          report("10.9.9.9:1", "PROXY_ERROR"),
          report(id!, "SUCCESS", { outcome: outcome("SUCCESS", { latencyMs: 80 }) }),
          report("10.9.9.9:2", "BLOCKED"),
        ],
        W,
      );
      expect(done).toEqual({ applied: 1, notHeld: 0, fates: ["unknown", "applied", "unknown"] });
      expect(await proxyView(h, id!)).toMatchObject({ score: 52, successCount: 1, failureCount: 0 });
      expect((await proxyView(h, id!)).latencyEwmaMs).toBeCloseTo(80, 6);
      expect(await applied(h, [report("10.9.9.9:1", "SUCCESS")])).toBe(0);
      expect(await applied(h, [report(id!, "SUCCESS")], "elsewhere")).toBe(0);
      expect(await applied(h, [])).toBe(0);
      await grant(h);
    });

    it("a large batch is applied completely (250 SUCCESS reports → score capped at 100)", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const batch = Array.from({ length: 250 }, () => report(id!, "SUCCESS"));
      expect(await applied(h, batch)).toBe(250);
      expect(await proxyView(h, id!)).toMatchObject({ score: 100, successCount: 250 });
    });

    it("a reported RATE_LIMITED with retryAfter cools the pair down", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const r = report(id!, "RATE_LIMITED", { outcome: outcome("RATE_LIMITED", { retryAfterMs: 7_000 }) });
      expect(await applied(h, [r])).toBe(1);
      expect(await deny(h)).toBe(7_000);
      h.clock.advance(7_000);
      await grant(h);
    });

    it("a report on a pair its worker never held is not applied: counted not held, the next acquire is not delayed", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      // another worker holds and releases the pair: that is no hold of W's
      await release(h, await grant(h, acq({ workerId: "worker-2", reportableMs: REPORTABLE })), "SUCCESS");
      const day = 86_400_000;
      const done = await h.store.reportOutcomes(
        POOL,
        [unclaimed(id!, "RATE_LIMITED", { outcome: outcome("RATE_LIMITED", { retryAfterMs: day }) }), unclaimed(id!, "BLOCKED")],
        W,
      );
      expect(done).toEqual({ applied: 0, notHeld: 2, fates: ["not-held", "not-held"] });
      expect(await proxyView(h, id!)).toMatchObject({ score: 52, failureCount: 0 });
      expect((await grant(h)).proxy.id).toBe(id);
      // a reporter without a worker id holds nothing either
      expect(await h.store.reportOutcomes(POOL, [unclaimed(id!, "BLOCKED")], "")).toMatchObject({ applied: 0, notHeld: 1 });
    });

    it("a report by the worker that held the pair applies while it holds it and reportableMs after the lease's expiry", async () => {
      const h = await openStore(factory);
      const [id, other] = await addProxies(h, 2);
      const lease = await grant(h, acq({ reportableMs: REPORTABLE, proxyId: id! }));
      const grantedAt = h.clock.now();
      expect(await applied(h, [unclaimed(id!, "SUCCESS")])).toBe(1);
      await release(h, lease, "SUCCESS");
      // another domain-key of the same proxy, and another proxy, were not held
      expect(
        await h.store.reportOutcomes(POOL, [unclaimed(id!, "SUCCESS", { domainKey: "other.example" }), unclaimed(other!, "SUCCESS")], W),
      ).toMatchObject({
        applied: 0,
        notHeld: 2,
      });
      h.clock.set(grantedAt + TTL + REPORTABLE - 1);
      expect(await applied(h, [unclaimed(id!, "RATE_LIMITED", { outcome: outcome("RATE_LIMITED", { retryAfterMs: 5_000 }) })])).toBe(1);
      expect(await deny(h, acq({ proxyId: id! }))).toBe(5_000);
      h.clock.advance(1);
      expect(await h.store.reportOutcomes(POOL, [unclaimed(id!, "BLOCKED")], W)).toMatchObject({ applied: 0, notHeld: 1 });
    });

    it("a renewal by its worker moves the hold to the renewed expiry; a grant without reportableMs records none", async () => {
      const h = await openStore(factory);
      const [id, other] = await addProxies(h, 2);
      const lease = await grant(h, acq({ reportableMs: REPORTABLE, proxyId: id! }));
      h.clock.advance(TTL - 1_000);
      const r = await h.store.renew({
        leaseId: lease.leaseId,
        fencingToken: lease.fencingToken,
        ttlMs: TTL,
        workerId: W,
        reportableMs: REPORTABLE,
      });
      expect(r).toMatchObject({ kind: "renewed" });
      const renewedAt = h.clock.now();
      await release(h, lease, "SUCCESS");
      h.clock.set(renewedAt + TTL + REPORTABLE - 1);
      expect(await applied(h, [unclaimed(id!, "SUCCESS")])).toBe(1);
      // without reportableMs (or renewed without a worker id) nothing is recorded
      const plain = await grant(h, acq({ proxyId: other! }));
      await renew(h, plain, TTL);
      expect(await h.store.reportOutcomes(POOL, [unclaimed(other!, "SUCCESS")], W)).toMatchObject({ applied: 0, notHeld: 1 });
    });

    it("a report's cool-down and ban are cut to reportMaxCoolDownMs and reportMaxBanMs; a lease's own are not", async () => {
      const caps = { scoring: { reportMaxCoolDownMs: 4_000, reportMaxBanMs: 9_000 } };
      const day = 86_400_000;
      const h = await openStore(factory, caps);
      const [id] = await addProxies(h, 1);
      expect(await applied(h, [report(id!, "RATE_LIMITED", { outcome: outcome("RATE_LIMITED", { retryAfterMs: day }) })])).toBe(1);
      expect(await deny(h)).toBe(4_000);
      h.clock.advance(4_000);
      // first-hand evidence keeps its length: a lease's RATE_LIMITED with a day's retry_after
      await release(h, await grant(h), "RATE_LIMITED", { retryAfterMs: day });
      expect(await deny(h)).toBe(day);
      const b = await openStore(factory, caps);
      const [banned] = await addProxies(b, 1);
      expect((await b.store.reportOutcomes(POOL, [report(banned!, "BLOCKED", { banTtlMs: day })], W)).applied).toBe(1);
      expect(await deny(b)).toBe(9_000);
      b.clock.advance(9_000);
      await grant(b);
    });
  });
}
