/**
 * Internal to the Redis store: what every operation needs.
 */
import type { ScoringConfig } from "@proxybroker/sdk/model";
import type { KeyBuilder } from "./keys.js";
import type { ScriptRunner } from "./scripts.js";

/** The runner, key names, scoring numbers, clock and randomness of one `RedisStore`. */
export interface StoreEnv {
  readonly runner: ScriptRunner;
  readonly keys: KeyBuilder;
  readonly scoring: ScoringConfig;
  /** ARGV `now`: epoch ms of the injected clock, or "" for Redis TIME. */
  readonly now: () => string;
  /** A seed for the script's `math.randomseed`. */
  readonly seed: () => number;
  /** Uniform in [0, 1) (quarantine jitter). */
  readonly random: () => number;
  /** How long a replaced policy set is kept (`PolicySet.history`). */
  readonly policyHistoryMs: number;
}
