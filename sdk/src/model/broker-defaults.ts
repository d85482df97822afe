/**
 * The broker's defaults for the settings a fallback pool mirrors (its LEASE_TTL_DEFAULT_MS,
 * SESSION_TTL_MS, BAN_TTL_MS, FALLBACK_WINDOW_MS and WORKER_ABSENT_AFTER_MS when unset). The SDK assumes
 * them until a pool snapshot says otherwise.
 */
export const BROKER_DEFAULTS = Object.freeze({
  /** A lease's TTL when neither the request nor a domain policy sets one. */
  leaseTtlMs: 30_000,
  /** How long a sticky session stays bound to its proxy. */
  sessionTtlMs: 600_000,
  /** A ban's length after BLOCKED when no domain policy sets one. */
  banTtlMs: 3_600_000,
  /** How long after its last contact a silent worker's fallback share stays reserved for it. */
  fallbackWindowMs: 600_000,
  /** A worker not heard (its echoed pong) this long counts as silent (WORKER_ABSENT_AFTER_MS). */
  workerAbsentAfterMs: 3_000,
  /** How often the broker brings the reservations of silent workers' claims up to date. */
  reserveIntervalMs: 500,
});
