import type { PoolSnapshot } from "../fallback/index.js";
import { BROKER_DEFAULTS } from "../model/broker-defaults.js";
import type { Unreachable } from "./reachability.js";
import { YIELD_HOLD_MS } from "../model/silence.js";

// The silence rules live in the model: the broker's reservations read them too.
export { DEFAULT_SILENT_AFTER_MS, MAX_SILENT_AFTER_MS, YIELD_HOLD_MS, silentHoldMs } from "../model/silence.js";

/** A positive finite number, else undefined (a snapshot file may hold anything). */
function positive(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? v : undefined;
}

/** The longest lease TTL the broker granted lately, as the snapshot says, else `fallbackTtlMs` or the broker's default TTL, whichever is longer. */
export function longestTtlOf(snapshot: PoolSnapshot | undefined, fallbackTtlMs: number): number {
  return positive(snapshot?.longestTtlMs) ?? Math.max(fallbackTtlMs, BROKER_DEFAULTS.leaseTtlMs);
}

/** The broker's FALLBACK_WINDOW_MS, as the snapshot says, else its default. */
export function fallbackWindowOf(snapshot: PoolSnapshot | undefined): number {
  return positive(snapshot?.fallbackWindowMs) ?? BROKER_DEFAULTS.fallbackWindowMs;
}

/** The broker's WORKER_ABSENT_AFTER_MS and reservation interval, as the snapshot says, else its defaults. */
export function silenceRulesOf(snapshot: PoolSnapshot | undefined): { absentAfterMs: number; reserveIntervalMs: number } {
  return {
    absentAfterMs: positive(snapshot?.workerAbsentAfterMs) ?? BROKER_DEFAULTS.workerAbsentAfterMs,
    reserveIntervalMs: positive(snapshot?.reserveIntervalMs) ?? BROKER_DEFAULTS.reserveIntervalMs,
  };
}

/**
 * How long after entering fallback nothing is granted (docs/spec.md §7): other workers' broker
 * leases may run on. Silent broker: see `silentHoldMs` (counted from the last pong). Broker
 * process gone: SDK workers give up leases outside their share at once, so nothing more when the
 * fleet is all SDK workers; a second when workers that yield their leases are in it (`yielding`:
 * their requests already sent finish); the longest TTL when workers that keep their leases to
 * their end are (`mixed`: raw stubs). Redis down: nobody can renew, every lease runs to its end:
 * the longest TTL.
 */
export function fallbackHoldMs(o: { why: Unreachable; mixed: boolean; yielding: boolean; longestTtlMs: number }): number {
  if (o.why === "silent") return 0;
  if (o.why !== "refused" || o.mixed) return o.longestTtlMs;
  return o.yielding ? YIELD_HOLD_MS : 0;
}
