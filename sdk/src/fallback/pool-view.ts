import type { FallbackPool } from "./fallback-pool.js";
import type { PoolSnapshot } from "./snapshot.js";
import type { FallbackClaim } from "../model/fallback-claim.js";

/**
 * What a worker may read of its client's fallback pool (`client.fallback`). Read-only: nothing
 * reachable from it changes the pool (the share is a frozen array, the rest are values).
 */
export interface FallbackPoolView {
  /** Proxy ids of this worker's share, sorted, as of the last completed build. */
  readonly share: readonly string[];
  /**
   * True when an outage would not stop this worker: its share holds a proxy (and, when the broker
   * lists workers' domain-keys, it may use one of them: `readyDomains`).
   */
  readonly hasPool: boolean;
  /**
   * The domain-keys this worker may lease for from its fallback pool now: those its acknowledged
   * claim names ("*": any, when the broker lists none or the pool is a static list).
   */
  readonly readyDomains: readonly string[];
  /**
   * The claim the broker acknowledged (docs/spec.md §7): what this worker may lease from its
   * fallback pool, and what the broker reserves for it while it is silent. Undefined: none yet.
   */
  readonly acknowledgedClaim: FallbackClaim | undefined;
  /** The pool snapshot in use (from the broker or the snapshot file), if any. */
  readonly snapshot: PoolSnapshot | undefined;
  /** Outcomes seen in fallback (or undelivered releases) waiting for replay to the broker. */
  readonly bufferedOutcomes: number;
  /** Outcomes dropped because the buffer was full, since the client started. */
  readonly droppedOutcomes: number;
}

/** A read-only view of `pool`: each field reads the pool's current value. */
export function fallbackPoolView(pool: FallbackPool): FallbackPoolView {
  return Object.freeze({
    get share() {
      return pool.share;
    },
    get hasPool() {
      return pool.hasPool;
    },
    get readyDomains() {
      return Object.freeze([...pool.readyDomains]);
    },
    get acknowledgedClaim() {
      return pool.acknowledged;
    },
    get snapshot() {
      return pool.snapshot;
    },
    get bufferedOutcomes() {
      return pool.bufferedOutcomes;
    },
    get droppedOutcomes() {
      return pool.droppedOutcomes;
    },
  });
}
