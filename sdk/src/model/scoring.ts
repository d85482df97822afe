import type { HealthResult, OutcomeKindName } from "./model.js";

/**
 * The numbers of SPEC §2. The broker reads them from its settings; the Redis store hands them to
 * its Lua scripts, the in-memory engine applies them with the functions below.
 */
export interface ScoringConfig {
  readonly initialScore: number;
  readonly minScore: number;
  readonly maxScore: number;
  readonly delta: Readonly<Record<OutcomeKindName, number>>;
  /** Below this score a proxy is quarantined. */
  readonly floor: number;
  readonly quarantineBaseMs: number;
  readonly quarantineMaxMs: number;
  /** ± fraction of the quarantine length drawn at random, e.g. 0.1. */
  readonly quarantineJitter: number;
  /** A proxy that has been quarantined this many times is blacklisted at its next fall. */
  readonly maxQuarantines: number;
  /** The score a proxy returns with from quarantine (by time, health check or admin restore). */
  readonly scoreAfterQuarantine: number;
  /** RATE_LIMITED without retry_after: base × 2^(consecutive − 1), capped. */
  readonly rateLimitBackoffBaseMs: number;
  readonly rateLimitBackoffMaxMs: number;
  /** Weight of a new latency sample in the EWMA. */
  readonly ewmaAlpha: number;
  readonly healthPass: number;
  readonly healthFail: number;
  readonly healthErrorFactor: number;
}

/** SPEC §2 defaults. */
export const DEFAULT_SCORING: ScoringConfig = {
  initialScore: 50,
  minScore: 0,
  maxScore: 100,
  delta: {
    SUCCESS: 2,
    RATE_LIMITED: -5,
    BLOCKED: -5,
    PROXY_ERROR: -15,
    TARGET_ERROR: 0,
    ABANDONED: 0,
  },
  floor: 10,
  quarantineBaseMs: 600_000,
  quarantineMaxMs: 86_400_000,
  quarantineJitter: 0.1,
  maxQuarantines: 3,
  scoreAfterQuarantine: 30,
  rateLimitBackoffBaseMs: 1_000,
  rateLimitBackoffMaxMs: 300_000,
  ewmaAlpha: 0.2,
  healthPass: 3,
  healthFail: -10,
  healthErrorFactor: 0.7,
};

/** Clamp a score into [minScore, maxScore]. */
export function clampScore(cfg: ScoringConfig, score: number): number {
  return Math.min(cfg.maxScore, Math.max(cfg.minScore, score));
}

/** The score after an outcome. */
export function scoreAfterOutcome(cfg: ScoringConfig, score: number, kind: OutcomeKindName): number {
  return clampScore(cfg, score + cfg.delta[kind]);
}

/** The score after a health check. */
export function scoreAfterHealth(cfg: ScoringConfig, score: number, result: HealthResult): number {
  switch (result) {
    case "pass":
      return clampScore(cfg, score + cfg.healthPass);
    case "fail":
      return clampScore(cfg, score + cfg.healthFail);
    case "error":
      return clampScore(cfg, score * cfg.healthErrorFactor);
  }
}

/** Outcomes that count as a failure in the proxy's counters. */
export function isFailure(kind: OutcomeKindName): boolean {
  return kind === "RATE_LIMITED" || kind === "BLOCKED" || kind === "PROXY_ERROR";
}

/**
 * Length of the `n`-th quarantine (n ≥ 1): base × 2^(n−1), capped, times (1 + jitter·(2u − 1))
 * with `u` uniform in [0, 1).
 */
export function quarantineLengthMs(cfg: ScoringConfig, n: number, u: number): number {
  const raw = Math.min(cfg.quarantineMaxMs, cfg.quarantineBaseMs * 2 ** Math.max(0, n - 1));
  return Math.min(cfg.quarantineMaxMs, Math.round(raw * (1 + cfg.quarantineJitter * (2 * u - 1))));
}

/** Cool-down after the `n`-th consecutive RATE_LIMITED (n ≥ 1) that carried no retry_after. */
export function rateLimitBackoffMs(cfg: ScoringConfig, n: number): number {
  return Math.min(cfg.rateLimitBackoffMaxMs, cfg.rateLimitBackoffBaseMs * 2 ** Math.max(0, n - 1));
}

/** New latency EWMA after a sample; the first sample sets it. */
export function nextEwma(cfg: ScoringConfig, ewma: number, sampleMs: number): number {
  if (sampleMs <= 0) return ewma;
  if (ewma <= 0) return sampleMs;
  return ewma + cfg.ewmaAlpha * (sampleMs - ewma);
}
