/**
 * Internal to the conformance suite: §3 sticky sessions.
 */
import { describe, expect, it } from "vitest";
import type { AcquireParams } from "@proxybroker/sdk/model";
import { acq, addProxies, deny, grant, openStore, proxySpec, release, TTL, type StoreFactory } from "./harness.js";

const SESSION = "cart-42";

function session(over: Partial<AcquireParams> = {}): AcquireParams {
  return acq({ sessionKey: SESSION, ...over });
}

export function sessionSuite(factory: StoreFactory): void {
  describe("§3 sticky sessions", () => {
    it("a session keeps its proxy across releases", async () => {
      const h = await openStore(factory);
      await addProxies(h, 20);
      const first = await grant(h, session());
      expect(first).toMatchObject({ sessionKey: SESSION, sessionRebound: false });
      await release(h, first, "TARGET_ERROR");
      for (let i = 0; i < 10; i++) {
        await release(h, await grant(h, acq({ workerId: "no-session" })), "TARGET_ERROR");
        const again = await grant(h, session());
        expect(again.proxy.id, `use ${i}`).toBe(first.proxy.id);
        expect(again.sessionRebound).toBe(false);
        await release(h, again, "TARGET_ERROR");
        h.clock.advance(1_000);
      }
    });

    it("while its proxy is busy or paced, the session is denied rather than switched", async () => {
      const h = await openStore(factory);
      await addProxies(h, 20);
      const paced = session({ minIntervalMs: 5_000 });
      const held = await grant(h, paced);
      // held until its expiry, then paced from that end
      expect(await deny(h, paced)).toBe(TTL + 5_000);
      h.clock.advance(1_000);
      await release(h, held, "SUCCESS");
      expect(await deny(h, paced)).toBe(5_000);
      h.clock.advance(5_000);
      const again = await grant(h, paced);
      expect(again).toMatchObject({ sessionRebound: false });
      expect(again.proxy.id).toBe(held.proxy.id);
    });

    it("rebinds with sessionRebound = true when its proxy is banned for the domain-key", async () => {
      const h = await openStore(factory);
      await addProxies(h, 20);
      const first = await grant(h, session());
      await release(h, first, "BLOCKED");
      const rebound = await grant(h, session());
      expect(rebound.proxy.id).not.toBe(first.proxy.id);
      expect(rebound.sessionRebound).toBe(true);
      await release(h, rebound, "TARGET_ERROR");
      const after = await grant(h, session());
      expect(after.proxy.id).toBe(rebound.proxy.id);
      expect(after.sessionRebound).toBe(false);
    });

    it("rebinds when its proxy is quarantined", async () => {
      const h = await openStore(factory, { scoring: { initialScore: 20 } });
      await addProxies(h, 20);
      const first = await grant(h, session());
      await release(h, first, "PROXY_ERROR");
      const rebound = await grant(h, session());
      expect(rebound.proxy.id).not.toBe(first.proxy.id);
      expect(rebound.sessionRebound).toBe(true);
    });

    it("rebinds when its proxy is removed", async () => {
      const h = await openStore(factory);
      await addProxies(h, 20);
      const first = await grant(h, session());
      await release(h, first, "SUCCESS");
      await h.store.removeProxies("default", [first.proxy.id]);
      const rebound = await grant(h, session());
      expect(rebound.proxy.id).not.toBe(first.proxy.id);
      expect(rebound.sessionRebound).toBe(true);
    });

    it("rebinds when its proxy no longer matches the requested labels", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 20, { labels: { country: "de" } });
      const de = session({ labels: { country: "de" } });
      const first = await grant(h, de);
      await release(h, first, "SUCCESS");
      const relabelled = proxySpec(ids.indexOf(first.proxy.id), { labels: { country: "fr" } });
      expect(relabelled.id).toBe(first.proxy.id);
      expect(await h.store.addProxies("default", [relabelled])).toEqual({ added: [], updated: [first.proxy.id] });
      const rebound = await grant(h, de);
      expect(rebound.proxy.id).not.toBe(first.proxy.id);
      expect(rebound.proxy.labels).toEqual({ country: "de" });
      expect(rebound.sessionRebound).toBe(true);
    });

    it("the binding lasts sessionTtlMs after the last grant through it", async () => {
      const h = await openStore(factory);
      await addProxies(h, 20);
      const short = session({ sessionTtlMs: 60_000 });
      const first = await grant(h, short);
      await release(h, first, "TARGET_ERROR");
      // 40 s steps over 120 s: only the refresh on each grant keeps the binding alive
      for (let use = 1; use <= 3; use++) {
        await release(h, await grant(h, acq({ workerId: "no-session" })), "TARGET_ERROR");
        h.clock.advance(40_000);
        const lease = await grant(h, short);
        expect(lease.proxy.id, `use ${use}`).toBe(first.proxy.id);
        expect(lease.sessionRebound).toBe(false);
        await release(h, lease, use === 3 ? "BLOCKED" : "TARGET_ERROR");
      }
      // the bound proxy is now banned for this domain-key; once the binding has expired the
      // session starts afresh, which is not a rebind
      h.clock.advance(60_001);
      const fresh = await grant(h, short);
      expect(fresh.proxy.id).not.toBe(first.proxy.id);
      expect(fresh.sessionRebound).toBe(false);
    });
  });
}
