/**
 * Internal to the conformance suite: adaptive pacing of a domain-key (§2): RATE_LIMITED raises
 * the interval multiplicatively, SUCCESS lowers it slowly, never below the policy's interval nor
 * the learned limit while it is remembered, and never above the cap.
 */
import { describe, expect, it } from "vitest";
import type { AcquireParams, LeaseView } from "@proxybroker/sdk/model";
import {
  acq,
  addProxies,
  DOMAIN,
  grant,
  openStore,
  release,
  type Harness,
  type StoreFactory,
  type ConformanceOptions,
  poolWide,
} from "./harness.js";

/** The adaptive interval of the test domain-key now. */
async function adaptiveMs(h: Harness, domainKey = DOMAIN): Promise<number> {
  const [state] = await h.store.domainPacing("default", [domainKey], 10);
  return state?.adaptiveMs ?? -1;
}

/** Grant with `params`, advancing the fake clock past any wait, then release with `kind`. */
async function cycle(h: Harness, params: AcquireParams, kind: "SUCCESS" | "RATE_LIMITED"): Promise<LeaseView> {
  for (let i = 0; i < 1_000; i++) {
    const r = await h.store.acquire(params);
    if (r.kind === "granted") {
      await release(h, r.lease, kind, kind === "RATE_LIMITED" ? { httpStatus: 429 } : { httpStatus: 200 });
      return r.lease;
    }
    if (r.kind !== "denied") throw new Error(`unexpected ${r.kind}`);
    h.clock.advance(Math.max(1, r.retryAfterMs));
  }
  throw new Error("never granted");
}

export function adaptiveSuite(factory: StoreFactory, options: ConformanceOptions = {}): void {
  describe("§2 adaptive pacing", () => {
    it("a domain-key nobody configured starts at 0, and a RATE_LIMITED starts its interval", async () => {
      const h = await openStore(factory);
      await addProxies(h, 4);
      const free = acq({ adaptive: true });
      expect(await adaptiveMs(h)).toBe(0);
      await cycle(h, free, "SUCCESS");
      expect(await adaptiveMs(h)).toBe(0);
      await cycle(h, free, "RATE_LIMITED");
      expect(await adaptiveMs(h)).toBe(h.scoring.adaptive.startMs);
      // grants now use it: a released pair waits for the raised interval
      const lease = await grant(h, free);
      await release(h, lease, "TARGET_ERROR");
      const other = await grant(h, free);
      expect(other.proxy.id).not.toBe(lease.proxy.id);
    });

    it("outcomes of leases granted before the last raise neither compound it nor lower it", async () => {
      const h = await openStore(factory);
      await addProxies(h, 5);
      const free = acq({ adaptive: true });
      // five leases in flight at interval 0, all answered 429: one raise, not five
      const leases = [];
      for (let i = 0; i < 5; i++) leases.push(await grant(h, free));
      for (const l of leases.slice(0, 4)) await release(h, l, "RATE_LIMITED", { httpStatus: 429 });
      expect(await adaptiveMs(h)).toBe(h.scoring.adaptive.startMs);
      // the last one succeeded at interval 0: it says nothing about the raised interval
      await release(h, leases[4]!, "SUCCESS", { httpStatus: 200 });
      expect(await adaptiveMs(h)).toBe(h.scoring.adaptive.startMs);
      const [state] = await h.store.domainPacing("default", [DOMAIN], 1);
      expect(state?.learnedMs).toBe(0);
    });

    it("a raised interval holds at once for every pair of the domain-key", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      const free = acq({ adaptive: true });
      const a = await grant(h, free);
      const b = await grant(h, free);
      await release(h, a, "SUCCESS", { httpStatus: 200 });
      await release(h, b, "RATE_LIMITED", { httpStatus: 429 }); // raised to startMs
      // a's pair ended at interval 0 before the raise, yet waits for the raised interval from its end
      expect(await h.store.acquire(free)).toEqual({ kind: "denied", retryAfterMs: h.scoring.adaptive.startMs });
      h.clock.advance(h.scoring.adaptive.startMs);
      const ids = new Set([(await grant(h, free)).proxy.id, (await grant(h, free)).proxy.id]);
      expect(ids).toEqual(new Set([a.proxy.id, b.proxy.id]));
    });

    it("paces every pair of the domain-key by the raised interval (release anchor)", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const free = acq({ adaptive: true });
      await cycle(h, free, "RATE_LIMITED"); // cool-down 1 s (backoff) and interval 1 s
      h.clock.advance(5_000);
      const lease = await grant(h, free);
      await release(h, lease, "TARGET_ERROR");
      const r = await h.store.acquire(free);
      expect(r).toEqual({ kind: "denied", retryAfterMs: h.scoring.adaptive.startMs });
    });

    if (poolWide(options)) {
      it("successes lower it by `decrease`, once per interval, down to margin × the learned limit", async () => {
        const h = await openStore(factory);
        await addProxies(h, 4);
        const cfg = h.scoring.adaptive;
        const p = acq({ adaptive: true, minIntervalMs: 400 });
        await cycle(h, p, "RATE_LIMITED"); // granted at 400: learned 400, interval 800
        expect(await adaptiveMs(h)).toBe(800);
        await cycle(h, p, "SUCCESS");
        const once = Math.round(800 * (1 - cfg.decrease));
        expect(await adaptiveMs(h)).toBe(once);
        // more successes within the same interval change nothing
        await cycle(h, p, "SUCCESS");
        await cycle(h, p, "SUCCESS");
        expect(await adaptiveMs(h)).toBe(once);
        const lowerAll = async (): Promise<void> => {
          for (let i = 0; i < 40; i++) {
            h.clock.advance(await adaptiveMs(h));
            await cycle(h, p, "SUCCESS");
          }
        };
        await lowerAll();
        expect(await adaptiveMs(h)).toBe(Math.round(400 * cfg.margin));
        // once the learned limit is forgotten, it falls back to the policy's interval (0 = not raised)
        h.clock.advance(cfg.memoryMs);
        await lowerAll();
        expect(await adaptiveMs(h)).toBe(0);
      });
    }

    it("never goes below the policy's interval, and the cap bounds it", async () => {
      const h = await openStore(factory);
      await addProxies(h, 8);
      const p = acq({ adaptive: true, minIntervalMs: 300, maxIntervalMs: 2_000 });
      const seen: number[] = [];
      for (let i = 0; i < 5; i++) {
        await cycle(h, p, "RATE_LIMITED");
        seen.push(await adaptiveMs(h));
      }
      expect(seen).toEqual([600, 1_200, 2_000, 2_000, 2_000]);
      const states = await h.store.domainPacing("default", [], 10);
      expect(states.map((s) => s.domainKey)).toEqual([DOMAIN]);
      expect(states[0]?.learnedMs).toBe(2_000);
    });

    it("a fixed interval (adaptive off) is never raised", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      const fixed = acq({ adaptive: false, minIntervalMs: 300 });
      await cycle(h, fixed, "RATE_LIMITED");
      await cycle(h, fixed, "RATE_LIMITED");
      expect(await adaptiveMs(h)).toBe(0);
    });

    it("is per domain-key, and lists adapted domain-keys highest first", async () => {
      const h = await openStore(factory);
      await addProxies(h, 4);
      await cycle(h, acq({ adaptive: true, domainKey: "a.example" }), "RATE_LIMITED");
      await cycle(h, acq({ adaptive: true, domainKey: "b.example", minIntervalMs: 5_000 }), "RATE_LIMITED");
      expect(await adaptiveMs(h, "c.example")).toBe(0);
      const listed = await h.store.domainPacing("default", [], 10);
      expect(listed.map((s) => [s.domainKey, s.adaptiveMs])).toEqual([
        ["b.example", 10_000],
        ["a.example", h.scoring.adaptive.startMs],
      ]);
      expect(await h.store.domainPacing("default", [], 1)).toHaveLength(1);
      expect(await h.store.domainPacing("never-used", [], 10)).toEqual([]);
    });
  });
}
