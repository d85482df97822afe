/**
 * Test helpers: a manual clock and a small seeded PRNG, so store tests never sleep and never
 * depend on luck.
 */

/** A clock that moves only when the test says so. Times are epoch milliseconds. */
export interface FakeClock {
  /** The current time. Pass `() => clock.now()` where a `clock: () => number` is wanted. */
  now(): number;
  /** Move forward by `ms` (≥ 0) and return the new time. */
  advance(ms: number): number;
  /** Jump to `ms` (never backwards) and return it. */
  set(ms: number): number;
}

/** 2023-11-14T22:13:20Z: a realistic epoch-ms value, far from 0 so "0 = unset" bugs show. */
export const FAKE_EPOCH_MS = 1_700_000_000_000;

/** A manual clock starting at `startMs`. */
export function fakeClock(startMs: number = FAKE_EPOCH_MS): FakeClock {
  let t = startMs;
  return {
    now: () => t,
    advance(ms: number): number {
      if (!(ms >= 0)) throw new RangeError(`fake clock cannot go backwards (advance ${ms})`);
      t += ms;
      return t;
    },
    set(ms: number): number {
      if (!(ms >= t)) throw new RangeError(`fake clock cannot go backwards (set ${ms} < ${t})`);
      t = ms;
      return t;
    },
  };
}

/** mulberry32: a tiny seeded PRNG with values uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
