/**
 * How long a silent connection takes (docs/failures.md "How long a silent connection takes"): the
 * bounds a client keeps to when the broker stops answering, and from when a silent worker's
 * fallback pool may serve its claim. The SDK's fallback waits that long (sdk/src/client); the
 * broker's reservations (src/lease/reservations.ts) grant the claim's pairs, to callers that keep
 * to their TTL, only until half a second before the earliest such moment.
 */

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

/**
 * After entering fallback, how long nothing is granted when workers that yield their leases (the
 * Python client: it stops using them at once, but a request it already sent finishes) were
 * listed lately.
 */
export const YIELD_HOLD_MS = 1_000;

/**
 * A reserved pair is granted to callers that keep to their TTL (`AcquireParams.honorsTtl`) only
 * until this long before the earliest moment its silent worker's fallback pool may serve it
 * (`claimServedAt`): the broker's and Redis's clocks, and the caller's request in flight.
 */
export const GAP_MARGIN_MS = 500;

/**
 * The earliest moment a worker whose last echoed pong the broker sent at `heardAt` may serve its
 * claim from its fallback pool: `silentHoldMs` with no raw-stub or yielding worker in the fleet
 * (those only make it later), and each pair its interval after that.
 */
export function claimServedAt(heardAt: number, o: { absentAfterMs: number; reserveIntervalMs: number }): number {
  return heardAt + silentHoldMs({ ...o, mixed: false, yielding: false, longestTtlMs: 0 });
}
