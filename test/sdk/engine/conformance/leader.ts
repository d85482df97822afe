/**
 * Internal to the conformance suite: leader leases (`campaign`, `resign`) and the fencing of
 * health-check results by the leader's term.
 */
import { describe, expect, it } from "vitest";
import { StaleTermError } from "@proxybroker/sdk/engine";
import { addProxies, openStore, type StoreFactory } from "./harness.js";

export function leaderSuite(factory: StoreFactory): void {
  describe("leader lease", () => {
    it("one holder at a time; renewed by its holder; after its TTL the next one gets a higher term; resign frees it", async () => {
      const h = await openStore(factory);
      const a = await h.store.campaign("health", "broker-a", 3_000);
      expect(a).toMatchObject({ leader: true, holder: "broker-a" });
      expect(await h.store.campaign("health", "broker-b", 3_000)).toEqual({
        leader: false,
        term: a.term,
        holder: "broker-a",
        remainingMs: 3_000,
      });
      h.clock.advance(2_000);
      expect(await h.store.campaign("health", "broker-a", 3_000)).toEqual({
        leader: true,
        term: a.term,
        holder: "broker-a",
        remainingMs: 3_000,
      });
      h.clock.advance(2_500);
      expect((await h.store.campaign("health", "broker-b", 3_000)).leader).toBe(false); // renewed 2.5 s ago
      h.clock.advance(600);
      const b = await h.store.campaign("health", "broker-b", 3_000);
      expect(b.leader).toBe(true);
      expect(b.term).toBeGreaterThan(a.term);
      expect(await h.store.campaign("health", "broker-a", 3_000)).toMatchObject({ leader: false, term: b.term, holder: "broker-b" });
      await h.store.resign("health", "broker-a"); // not the holder: nothing
      expect((await h.store.campaign("health", "broker-a", 3_000)).leader).toBe(false);
      await h.store.resign("health", "broker-b");
      const c = await h.store.campaign("health", "broker-a", 3_000);
      expect(c.leader).toBe(true);
      expect(c.term).toBeGreaterThan(b.term);
      expect((await h.store.campaign("other", "broker-b", 3_000)).leader).toBe(true);
    });

    it("a health-check result of an older term than one the pool has seen is refused", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      expect((await h.store.recordHealth("default", id!, "pass", 200))?.score).toBe(53);
      await expect(h.store.recordHealth("default", id!, "fail", 100)).rejects.toBeInstanceOf(StaleTermError);
      expect((await h.store.recordHealth("default", id!, "pass", 200))?.score).toBe(56);
      expect((await h.store.recordHealth("default", id!, "pass", 300))?.score).toBe(59);
      await expect(h.store.recordHealth("default", id!, "pass", 200)).rejects.toBeInstanceOf(StaleTermError);
      // without a term: not fenced
      expect((await h.store.recordHealth("default", id!, "pass"))?.score).toBe(62);
    });
  });
}
