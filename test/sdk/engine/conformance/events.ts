/**
 * Internal to the conformance suite: the pool's event stream and the audit trail.
 */
import { describe, expect, it } from "vitest";
import { acq, addProxies, grant, openStore, release, type StoreFactory, type ConformanceOptions, poolWide } from "./harness.js";

export function eventSuite(factory: StoreFactory, options: ConformanceOptions = {}): void {
  describe("events and audit", () => {
    if (poolWide(options)) {
      it("bans, quarantines and blacklistings are events, in order, with the events appended; a cursor reads on", async () => {
        const h = await openStore(factory, { scoring: { initialScore: 12, maxQuarantines: 0 } });
        const [a, b] = await addProxies(h, 2);
        const lease = await grant(h, acq({ proxyId: a! }));
        await release(h, lease, "BLOCKED"); // a ban of the pair; 12 − 5 = 7 < 10 with 0 quarantines allowed: blacklisted
        await h.store.appendEvent("default", { kind: "ADMIN", proxyId: b!, domainKey: "", detail: "disable" });
        const first = await h.store.readEvents("default", "", { count: 10, blockMs: 0 });
        expect(first.events.map((e) => [e.kind, e.proxyId, e.domainKey])).toEqual([
          ["BAN", a, "shop.example.com"],
          ["BLACKLIST", a, ""],
          ["ADMIN", b, ""],
        ]);
        expect(Number(first.events[0]!.detail)).toBe(h.clock.now() + 3_600_000);
        expect(first.cursor).toBe(first.events[2]!.id);
        // nothing new: the cursor stays, and a blocked read waits for the next one
        expect(await h.store.readEvents("default", first.cursor, { count: 10, blockMs: 0 })).toEqual({ events: [], cursor: first.cursor });
        const waiting = h.store.readEvents("default", first.cursor, { count: 10, blockMs: 5_000 });
        await new Promise((r) => setTimeout(r, 50));
        await h.store.appendEvent("default", { kind: "POLICY", proxyId: "", domainKey: "shop.example.com", detail: "set" });
        const next = await waiting;
        expect(next.events.map((e) => e.kind)).toEqual(["POLICY"]);
        // "$": only what comes from now on
        const fresh = await h.store.readEvents("default", "$", { count: 10, blockMs: 0 });
        expect(fresh.events).toEqual([]);
        await h.store.appendEvent("default", { kind: "ADMIN", proxyId: a!, domainKey: "", detail: "restore" });
        expect((await h.store.readEvents("default", fresh.cursor, { count: 10, blockMs: 0 })).events.map((e) => e.detail)).toEqual([
          "restore",
        ]);
        expect((await h.store.readEvents("elsewhere", "", { count: 10, blockMs: 0 })).events).toEqual([]);
      });
    }

    it("a quarantine is an event with its until", async () => {
      const h = await openStore(factory, { scoring: { initialScore: 12 } });
      const [a] = await addProxies(h, 1);
      await release(h, await grant(h), "PROXY_ERROR");
      const { events } = await h.store.readEvents("default", "", { count: 10, blockMs: 0 });
      expect(events.map((e) => e.kind)).toEqual(["QUARANTINE"]);
      expect(events[0]!.proxyId).toBe(a);
      expect(Number(events[0]!.detail)).toBeGreaterThan(h.clock.now());
    });

    it("the audit trail keeps admin calls, newest first", async () => {
      const h = await openStore(factory);
      await h.store.appendAudit({ actor: "ops", method: "AddProxies", pool: "default", detail: "2 added" });
      await h.store.appendAudit({ actor: "", method: "BanProxies", pool: "default", detail: "10.0.0.1:1 on shop.example.com for 60 s" });
      const entries = await h.store.listAudit(10);
      expect(entries.map((e) => [e.actor, e.method, e.pool, e.detail])).toEqual([
        ["", "BanProxies", "default", "10.0.0.1:1 on shop.example.com for 60 s"],
        ["ops", "AddProxies", "default", "2 added"],
      ]);
      expect(entries[0]!.at).toBeGreaterThan(0);
      expect(await h.store.listAudit(1)).toHaveLength(1);
    });
  });
}
