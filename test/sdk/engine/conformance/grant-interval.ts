/**
 * Internal to the conformance suite: the pacing interval a grant reports (`LeaseView.intervalMs`,
 * what kept leases are decided by): 0 when the pair is not paced, the interval this grant set
 * before the pair's next grant otherwise (jitter and a learned interval included), and -1 for a
 * retried request given its first lease again (its interval is not known again).
 */
import { describe, expect, it } from "vitest";
import { acq, addProxies, DOMAIN, grant, openStore, release, type StoreFactory } from "./harness.js";

export function grantIntervalSuite(factory: StoreFactory): void {
  describe("the interval a grant reports (kept leases)", () => {
    it("is 0 for a pair nobody paces: no policy interval, no jitter, nothing learned", async () => {
      const h = await openStore(factory);
      await addProxies(h, 3);
      expect((await grant(h, acq())).intervalMs).toBe(0);
      expect((await grant(h, acq({ adaptive: true }))).intervalMs).toBe(0);
      // a pair used before without pacing stays unpaced
      const again = await grant(h, acq({ domainKey: "other.example" }));
      await release(h, again, "SUCCESS", { httpStatus: 200 });
      expect((await grant(h, acq({ domainKey: "other.example" }))).intervalMs).toBe(0);
    });

    it("is the policy's minimum interval", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      const lease = await grant(h, acq({ minIntervalMs: 300 }));
      expect(lease.intervalMs).toBeGreaterThanOrEqual(300);
      expect(lease.intervalMs).toBe(300);
      expect((await grant(h, acq({ minIntervalMs: 300, adaptive: true }))).intervalMs).toBe(300);
    });

    it("includes the jitter drawn: within [min, min + jitter]", async () => {
      const h = await openStore(factory);
      await addProxies(h, 8);
      const seen: number[] = [];
      for (let i = 0; i < 8; i++) seen.push((await grant(h, acq({ minIntervalMs: 300, jitterMs: 200 }))).intervalMs);
      for (const ms of seen) {
        expect(ms).toBeGreaterThanOrEqual(300);
        expect(ms).toBeLessThanOrEqual(500);
      }
    });

    it("is at least 1 ms with a jitter alone, whatever it drew: the pair is paced", async () => {
      const h = await openStore(factory);
      await addProxies(h, 40);
      // 40 draws in [0, 2]: a draw of 0 is all but certain among them
      for (let i = 0; i < 40; i++) expect((await grant(h, acq({ jitterMs: 2 }))).intervalMs).toBeGreaterThanOrEqual(1);
    });

    it("is above 0 once adaptive pacing raised the domain-key's interval (a RATE_LIMITED)", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      const free = acq({ adaptive: true });
      const first = await grant(h, free);
      expect(first.intervalMs).toBe(0);
      await release(h, first, "RATE_LIMITED", { httpStatus: 429 });
      const [state] = await h.store.domainPacing("default", [DOMAIN], 1);
      expect(state?.adaptiveMs).toBeGreaterThan(0);
      // past the cool-down and the raised interval of the released pair
      h.clock.advance(60_000);
      const next = await grant(h, free);
      expect(next.intervalMs).toBeGreaterThan(0);
      expect(next.intervalMs).toBeGreaterThanOrEqual(state?.adaptiveMs ?? Number.POSITIVE_INFINITY);
      // another domain-key is not raised
      expect((await grant(h, acq({ adaptive: true, domainKey: "calm.example" }))).intervalMs).toBe(0);
    });

    it("is -1 (not known) for a retried request given its first lease again", async () => {
      const h = await openStore(factory);
      await addProxies(h, 3);
      const first = await grant(h, acq({ requestId: "r-kept" }));
      expect(first.intervalMs).toBe(0);
      h.clock.advance(1_000);
      const again = await grant(h, acq({ requestId: "r-kept" }));
      expect(again.leaseId).toBe(first.leaseId);
      expect(again.intervalMs).toBe(-1);
      // a paced one too: the replay does not know its interval
      const paced = await grant(h, acq({ requestId: "r-paced", minIntervalMs: 300 }));
      expect(paced.intervalMs).toBe(300);
      const pacedAgain = await grant(h, acq({ requestId: "r-paced", minIntervalMs: 300 }));
      expect(pacedAgain.leaseId).toBe(paced.leaseId);
      expect(pacedAgain.intervalMs).toBe(-1);
    });
  });
}
