/**
 * Pruning inside the in-memory engine (sdk/src/engine/memory/prune.ts): pure state, no store.
 */
import { describe, expect, it } from "vitest";
import { PoolState } from "../../../../sdk/src/engine/memory/pool-state.js";
import { pairOf } from "../../../../sdk/src/engine/memory/pair.js";
import { pairStale, sweepDomains } from "../../../../sdk/src/engine/memory/prune.js";
import { SeenWorkers } from "../../../../sdk/src/engine/memory/seen-workers.js";

const DAY = 86_400_000;
const T0 = 1_700_000_000_000;

describe("in-memory pruning", () => {
  it("a pair is stale a day after the last moment it remembers, and never while a holder is live", () => {
    const pool = new PoolState("p");
    const pair = pairOf(pool.domain("a.example"), "10.0.0.1:1");
    pair.anchorAt = T0;
    pair.banUntil = T0 + 3_600_000;
    expect(pairStale(pair, T0 + DAY)).toBe(false);
    expect(pairStale(pair, T0 + 3_600_000 + DAY)).toBe(true);
    pair.holders.set("lease", T0 + 10 * DAY);
    expect(pairStale(pair, T0 + 5 * DAY)).toBe(false);
    // the holder expired long ago: it ends at its expiry (and anchors the pair there)
    expect(pairStale(pair, T0 + 11 * DAY + 1)).toBe(true);
  });

  it("sweeps drop domain-keys that remember nothing and keep those with pairs or adapted pacing", () => {
    const pool = new PoolState("p");
    // 1,000 domain-keys asked for once (nothing granted), one with a fresh pair, one adapted
    for (let i = 0; i < 1_000; i++) pool.domain(`random-${i}.example`);
    const kept = pairOf(pool.domain("kept.example"), "10.0.0.1:1");
    kept.anchorAt = T0;
    pool.domain("adapted.example").adaptive = { adaptiveMs: 2_000, learnedMs: 1_000, learnedAt: T0, loweredAt: 0 };
    sweepDomains(pool, T0, 2_000);
    expect([...pool.domains.keys()].sort()).toEqual(["adapted.example", "kept.example"]);
    // a day later the pair is stale: the sweeps (two pairs per domain-key looked at) drop it, then its domain-key
    sweepDomains(pool, T0 + DAY, 10);
    sweepDomains(pool, T0 + DAY, 10);
    expect([...pool.domains.keys()]).toEqual(["adapted.example"]);
  });

  it("keeps at most `max` workers, the most recently seen, and forgets those not seen for a week", () => {
    const seen = new SeenWorkers(3);
    seen.see("a", T0);
    seen.see("b", T0 + 1);
    seen.see("c", T0 + 2);
    seen.see("a", T0 + 3); // seen again: now the most recent
    seen.see("d", T0 + 4);
    expect([...seen].map(([id]) => id)).toEqual(["c", "a", "d"]);
    seen.see("e", T0 + 7 * DAY + 3);
    expect([...seen].map(([id]) => id)).toEqual(["a", "d", "e"]);
    expect(seen.get("d")).toBe(T0 + 4);
  });
});
