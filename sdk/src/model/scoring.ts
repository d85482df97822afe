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
  /** Adaptive pacing of a domain-key (§2). */
  readonly adaptive: AdaptivePacingConfig;
}

/**
 * Adaptive pacing (§2), per domain-key: a RATE_LIMITED raises the interval multiplicatively, a
 * SUCCESS lowers it a little — at most once per interval, so that the interval sinks by
 * `decrease` per round of the domain's pairs rather than per answer, and overshoots the site's
 * limit by at most one step — never below the policy's `min_interval`, nor, while it is
 * remembered, below `margin` × the longest interval that drew a RATE_LIMITED, and never above the
 * cap. A domain-key nobody configured starts at 0 and learns the site's limit this way.
 */
export interface AdaptivePacingConfig {
  /** The interval after a first RATE_LIMITED at interval 0. */
  readonly startMs: number;
  /** Factor applied on a RATE_LIMITED. */
  readonly increase: number;
  /** Fraction taken off by a SUCCESS (at most once per interval). */
  readonly decrease: number;
  /** The interval stays at or above `margin` × the learned limit. */
  readonly margin: number;
  /** How long a learned limit is remembered. */
  readonly memoryMs: number;
  /** The cap when the policy sets none. */
  readonly maxMs: number;
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
  adaptive: {
    startMs: 1_000,
    increase: 2,
    decrease: 0.05,
    margin: 1.25,
    memoryMs: 3_600_000,
    maxMs: 60_000,
  },
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

/** A domain-key's adaptive state: the raised interval and the learned limit (0 = none). */
export interface AdaptiveState {
  readonly adaptiveMs: number;
  readonly learnedMs: number;
  readonly learnedAt: number;
  /** When a SUCCESS last lowered the interval (epoch ms, 0 = never). */
  readonly loweredAt: number;
}

/** What a lease's grant knew about pacing, needed when its outcome comes back. */
export interface GrantPacing {
  /** The interval the lease was granted under, before jitter: max(policy, adaptive). */
  readonly baseMs: number;
  readonly policyMinMs: number;
  readonly maxIntervalMs: number;
}

/** The learned limit still remembered at `now` (0 once forgotten). */
export function learnedAt(cfg: AdaptivePacingConfig, s: AdaptiveState, now: number): number {
  return s.learnedMs > 0 && now - s.learnedAt < cfg.memoryMs ? s.learnedMs : 0;
}

/**
 * The state after a RATE_LIMITED of a lease granted under `g`: the learned limit becomes at
 * least the interval that drew it; the interval is multiplied by `increase` (from 0 it starts at
 * `startMs`), capped — but only when the lease ran at the current interval or above: the outcomes
 * of leases granted before the last raise were answered to an interval already given up, and
 * must not compound it.
 */
export function adaptOnRateLimited(cfg: AdaptivePacingConfig, s: AdaptiveState, g: GrantPacing, now: number): AdaptiveState {
  const learned = { learnedMs: Math.max(learnedAt(cfg, s, now), g.baseMs), learnedAt: now };
  if (g.baseMs < s.adaptiveMs) return { ...s, ...learned };
  const raised = g.baseMs > 0 ? g.baseMs * cfg.increase : cfg.startMs;
  return { ...s, adaptiveMs: Math.round(Math.min(capOf(cfg, g), raised)), ...learned };
}

/** The cap of the adaptive interval for a grant: its own, else the default; never below its policy. */
function capOf(cfg: AdaptivePacingConfig, g: GrantPacing): number {
  return Math.max(g.maxIntervalMs > 0 ? g.maxIntervalMs : cfg.maxMs, g.policyMinMs);
}

/**
 * The state after a SUCCESS of a lease granted under a raised interval: the interval loses
 * `decrease` of itself, down to the larger of the policy's interval and `margin` × the learned
 * limit; at or below the policy's interval it is no longer raised (0). Unchanged when it is not
 * raised, when it was lowered less than one interval ago, or when the lease was granted below the
 * current interval (at the policy's, or before the last raise: its success says nothing about
 * the current one).
 */
export function adaptOnSuccess(cfg: AdaptivePacingConfig, s: AdaptiveState, g: GrantPacing, now: number): AdaptiveState {
  if (s.adaptiveMs <= 0 || g.baseMs <= g.policyMinMs || g.baseMs < s.adaptiveMs) return s;
  if (now - s.loweredAt < s.adaptiveMs) return s;
  const cap = capOf(cfg, g);
  const floor = Math.max(g.policyMinMs, Math.round(learnedAt(cfg, s, now) * cfg.margin));
  const lowered = Math.min(cap, Math.max(floor, Math.round(s.adaptiveMs * (1 - cfg.decrease))));
  if (lowered === s.adaptiveMs) return s;
  return { ...s, adaptiveMs: lowered > g.policyMinMs ? lowered : 0, loweredAt: now };
}

/** The interval a grant uses before jitter: the policy's, or the adaptive one when higher. */
export function baseInterval(policyMinMs: number, adaptiveMs: number, adaptive: boolean): number {
  return adaptive ? Math.max(policyMinMs, adaptiveMs) : policyMinMs;
}
