/**
 * Keys and ARGV of the lease scripts, built from the store's parameters. The numbers of the
 * `ScoringConfig` travel as ARGV, so the TypeScript config is their only source.
 */
import type { AcquireParams, OutcomeKindName, OutcomeInput } from "../../../sdk/core/model.js";
import type { ScoringConfig } from "../../../sdk/core/scoring.js";
import type { PoolKeys } from "./keys.js";
import { labelNeedles } from "./labels.js";
import type { LeaseIdParts } from "./lease-id.js";
import type { ScriptArg, ScriptKeys } from "./scripts.js";

/** A lease record is kept at least this long after it ended (late renews answer EXPIRED). */
export const TOMBSTONE_MIN_MS = 10 * 60_000;

const KIND_CODES: Readonly<Record<OutcomeKindName, string>> = {
  SUCCESS: "S",
  RATE_LIMITED: "R",
  BLOCKED: "B",
  PROXY_ERROR: "P",
  TARGET_ERROR: "T",
  ABANDONED: "A",
};

/** A fencing token as the scripts compare it: an integer in plain decimals, else never equal. */
export function tokenArg(token: number): string {
  return Number.isSafeInteger(token) && token > 0 ? String(token) : "-";
}

/** A duration or count as a non-negative integer. */
function ms(x: number): number {
  return Number.isFinite(x) && x > 0 ? Math.floor(x) : 0;
}

/** The 8 scoring numbers of includes/scoring.lua (`scoringFrom`), ending with the jitter draw. */
export function scoringArgs(cfg: ScoringConfig, u: number): ScriptArg[] {
  return [
    cfg.minScore,
    cfg.maxScore,
    cfg.floor,
    cfg.maxQuarantines,
    cfg.quarantineBaseMs,
    cfg.quarantineMaxMs,
    cfg.quarantineJitter,
    u,
  ];
}

/** KEYS of acquireLease-7.lua. */
export function acquireKeys(keys: PoolKeys, p: AcquireParams): ScriptKeys<"acquireLease"> {
  return [
    keys.meta,
    keys.quarantine,
    keys.index,
    keys.candidates(p.tier),
    keys.busy(p.domainKey),
    keys.workers,
    keys.session(p.sessionKey),
  ];
}

/** ARGV of acquireLease-7.lua (`now` "" = Redis TIME). */
export function acquireArgs(
  keys: PoolKeys,
  p: AcquireParams,
  hex: string,
  cfg: ScoringConfig,
  now: string,
  seed: number,
): ScriptArg[] {
  return [
    keys.base,
    p.policyVersion,
    p.domainKey,
    p.workerId,
    ms(p.ttlMs),
    Math.max(1, ms(p.maxConcurrency)),
    ms(p.minIntervalMs),
    ms(p.banTtlMs),
    p.sessionKey,
    ms(p.sessionTtlMs),
    p.tier,
    hex,
    cfg.scoreAfterQuarantine,
    TOMBSTONE_MIN_MS,
    now,
    seed,
    ...labelNeedles(p.labels),
  ];
}

/** KEYS of releaseLease-8.lua. */
export function releaseKeys(keys: PoolKeys, lease: LeaseIdParts): ScriptKeys<"releaseLease"> {
  return [
    keys.lease(lease.hex),
    keys.pair(lease.domainKey, lease.proxyId),
    keys.busy(lease.domainKey),
    keys.proxy(lease.proxyId),
    keys.index,
    keys.quarantine,
    keys.blacklist,
    keys.meta,
  ];
}

/** The 21 release arguments (releaseLease-8.lua ARGV[1..21]; ARGV[22] is `now`). */
export function releaseArgs(
  keys: PoolKeys,
  lease: LeaseIdParts,
  token: number,
  outcome: OutcomeInput,
  cfg: ScoringConfig,
  u: number,
): ScriptArg[] {
  return [
    keys.base,
    lease.hex,
    lease.domainKey,
    lease.proxyId,
    tokenArg(token),
    KIND_CODES[outcome.kind],
    Number.isFinite(outcome.latencyMs) && outcome.latencyMs > 0 ? outcome.latencyMs : 0,
    ms(outcome.retryAfterMs),
    cfg.delta[outcome.kind],
    cfg.rateLimitBackoffBaseMs,
    cfg.rateLimitBackoffMaxMs,
    cfg.ewmaAlpha,
    TOMBSTONE_MIN_MS,
    ...scoringArgs(cfg, u),
  ];
}
