import type { LeaseOutcome } from "./lease.js";

/** Per-acquire options (`acquire`, and the base of `withLease`'s and `fetch`'s options). */
export interface AcquireOptions {
  /** Lease TTL, ms; default the client's `ttlMs`, else the broker's default for the domain. */
  readonly ttlMs?: number;
  /** Wait up to this long for an eligible proxy (inside the broker, or locally in fallback). Default 0. */
  readonly maxWaitMs?: number;
  /** Sticky session: the same key keeps its proxy (docs/spec.md §3). */
  readonly sessionKey?: string;
  readonly tier?: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** Renew every ttl/3 until released. Default true. */
  readonly heartbeat?: boolean;
  /**
   * Ask for a lease this worker may keep for more requests of the domain-key, one at a time, while
   * the pair is not paced: `lease.reusable` says whether the broker allowed it, and `lease.wanted`
   * (with `onWanted`) when it asks for it back (docs/spec.md §5, kept leases). Default false.
   */
  readonly reuse?: boolean;
}

/** Options of `withLease`. */
export interface WithLeaseOptions<T> extends AcquireOptions {
  /** The outcome of a result (default: the result's `outcome` field, else SUCCESS). */
  readonly outcomeOf?: (value: T) => LeaseOutcome;
}
