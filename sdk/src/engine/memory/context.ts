/**
 * Internal to the in-memory engine: what every operation needs besides the state.
 */
import type { ScoringConfig } from "../../model/scoring.js";

/** Scoring numbers, the store's clock (epoch ms) and its random source in [0, 1). */
export interface EngineContext {
  readonly scoring: ScoringConfig;
  readonly clock: () => number;
  readonly random: () => number;
}

/** Minimum time a lease is kept as a tombstone after it ended. */
export const TOMBSTONE_MIN_MS = 10 * 60_000;
