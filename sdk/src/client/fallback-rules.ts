import type { PoolSnapshot } from "../fallback/index.js";
import { BROKER_DEFAULTS } from "../model/broker-defaults.js";
import type { Unreachable } from "./reachability.js";

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

/**
 * How long a client takes, at most, to count a connection that answers nothing as an outage
 * (`fallback.silentAfterMs`, and the Python client's `silent_after`): by then it has given up its
 * broker leases outside its claim (docs/spec.md §7). The default, and the most either allows: a
 * silent worker waits that long for the others after the broker reserved its claim, so a longer
 * bound would cost every outage as much.
 */
export const DEFAULT_SILENT_AFTER_MS = 3_000;
export const MAX_SILENT_AFTER_MS = 3_000;
/** Replicas' clocks, and a pong's or a revocation's travel. */
const SILENT_MARGIN_MS = 500;

/**
 * A silent broker: how long after the last pong this worker heard its fallback pool may serve its
 * claim. The broker counts it silent `absentAfterMs` after the last pong it echoed (never a later
 * one) and reserves the claim within `reserveIntervalMs`; then it revokes other workers' leases
 * on the claim: connected ones stop at once (LeaseLost), ones cut off too stop when they count
 * their own silence (at most `MAX_SILENT_AFTER_MS` after their last answer, which came before the
 * revocation), Python workers' requests already sent finish within `YIELD_HOLD_MS`, and raw
 * stubs' leases run to their end (`longestTtlMs`) as their renewals are refused.
 */
export function silentHoldMs(o: {
  absentAfterMs: number;
  reserveIntervalMs: number;
  mixed: boolean;
  yielding: boolean;
  longestTtlMs: number;
}): number {
  const reserved = o.absentAfterMs + o.reserveIntervalMs + SILENT_MARGIN_MS;
  const othersStop = o.mixed ? o.longestTtlMs : MAX_SILENT_AFTER_MS + (o.yielding ? YIELD_HOLD_MS : 0) + SILENT_MARGIN_MS;
  return reserved + othersStop;
}

/** The broker's WORKER_ABSENT_AFTER_MS and reservation interval, as the snapshot says, else its defaults. */
export function silenceRulesOf(snapshot: PoolSnapshot | undefined): { absentAfterMs: number; reserveIntervalMs: number } {
  return {
    absentAfterMs: positive(snapshot?.workerAbsentAfterMs) ?? BROKER_DEFAULTS.workerAbsentAfterMs,
    reserveIntervalMs: positive(snapshot?.reserveIntervalMs) ?? BROKER_DEFAULTS.reserveIntervalMs,
  };
}

/**
 * After entering fallback, how long nothing is granted when workers that yield their leases (the
 * Python client: it stops using them at once, but a request it already sent finishes) were
 * listed lately.
 */
export const YIELD_HOLD_MS = 1_000;

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
