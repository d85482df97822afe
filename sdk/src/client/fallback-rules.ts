import type { PoolSnapshot } from "../fallback/index.js";
import type { Unreachable } from "./reachability.js";

/** The broker's defaults, for a fallback pool without snapshot. */
export const DEFAULT_TTL_MS = 30_000;
export const DEFAULT_FALLBACK_WINDOW_MS = 600_000;

/** A positive finite number, else undefined (a snapshot file may hold anything). */
function positive(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? v : undefined;
}

/** The longest lease TTL the broker granted lately, as the snapshot says, else `fallbackTtlMs`. */
export function longestTtlOf(snapshot: PoolSnapshot | undefined, fallbackTtlMs: number): number {
  return positive(snapshot?.longestTtlMs) ?? Math.max(fallbackTtlMs, DEFAULT_TTL_MS);
}

/** The broker's FALLBACK_WINDOW_MS, as the snapshot says, else its default. */
export function fallbackWindowOf(snapshot: PoolSnapshot | undefined): number {
  return positive(snapshot?.fallbackWindowMs) ?? DEFAULT_FALLBACK_WINDOW_MS;
}

/**
 * How long after entering fallback nothing is granted (docs/spec.md §7): other workers' broker
 * leases may run on. Silent broker: nothing more (the silence itself outlasted them). Broker
 * process gone: SDK workers give up leases outside their share at once, so nothing more when the
 * fleet is all SDK workers (`mixed` false), else the longest TTL (Python and raw-stub workers keep
 * theirs to their end). Redis down: nobody can renew, every lease runs to its end: the longest TTL.
 */
export function fallbackHoldMs(o: { why: Unreachable; mixed: boolean; longestTtlMs: number }): number {
  if (o.why === "silent") return 0;
  return o.why === "refused" && !o.mixed ? 0 : o.longestTtlMs;
}
