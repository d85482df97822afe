import { describe, expect, it } from "vitest";
import { fallbackHoldMs, fallbackWindowOf, longestTtlOf } from "../../../sdk/src/client/fallback-rules.js";
import type { PoolSnapshot } from "../../../sdk/src/fallback/index.js";

const snap = (over: Partial<PoolSnapshot>): PoolSnapshot => ({
  pool: "default",
  proxies: [],
  liveWorkers: [],
  policies: [],
  takenAt: 1,
  ...over,
});

describe("fallback rules", () => {
  it("hold nothing more when silent, or when the broker is gone and every worker gives up its leases", () => {
    expect(fallbackHoldMs({ why: "silent", mixed: true, yielding: false, longestTtlMs: 30_000 })).toBe(0);
    expect(fallbackHoldMs({ why: "refused", mixed: false, yielding: false, longestTtlMs: 30_000 })).toBe(0);
  });

  it("hold a second when workers that yield their leases were listed: a request they already sent finishes", () => {
    expect(fallbackHoldMs({ why: "refused", mixed: false, yielding: true, longestTtlMs: 30_000 })).toBe(1_000);
    expect(fallbackHoldMs({ why: "refused", mixed: true, yielding: true, longestTtlMs: 30_000 })).toBe(30_000);
  });

  it("hold the longest TTL when Redis is down, or when workers without fallback pool may hold leases", () => {
    expect(fallbackHoldMs({ why: "unavailable", mixed: false, yielding: false, longestTtlMs: 30_000 })).toBe(30_000);
    expect(fallbackHoldMs({ why: "refused", mixed: true, yielding: false, longestTtlMs: 5_000 })).toBe(5_000);
  });

  it("take the TTL and window from the snapshot, ignoring nonsense, else the broker's defaults", () => {
    expect(longestTtlOf(snap({ longestTtlMs: 2_000 }), 0)).toBe(2_000);
    expect(longestTtlOf(snap({ longestTtlMs: Number.NaN }), 0)).toBe(30_000);
    expect(longestTtlOf(undefined, 60_000)).toBe(60_000);
    expect(fallbackWindowOf(snap({ fallbackWindowMs: 120_000 }))).toBe(120_000);
    expect(fallbackWindowOf(snap({ fallbackWindowMs: -1 }))).toBe(600_000);
  });
});
