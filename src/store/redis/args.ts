/**
 * Keys and ARGV of the lease scripts, built from the store's parameters, and the constants baked
 * into the scripts. The numbers of the `ScoringConfig` are baked into the script text when the
 * scripts are loaded (`scriptConstants`), so the TypeScript config stays their only source and no
 * call carries them.
 */
import type { AcquireParams, OutcomeKindName, OutcomeInput, OutcomeReport } from "@proxybroker/sdk/model";
import type { ScoringConfig } from "@proxybroker/sdk/model";
import { MAX_WORKERS_PER_POOL } from "@proxybroker/sdk/model";
import type { PoolKeys } from "./keys.js";
import { labelNeedles } from "./labels.js";
import type { LeaseIdParts } from "./lease-id.js";
import type { ScriptArg, ScriptConstants, ScriptKeys } from "./scripts.js";

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

/**
 * The longest duration a script is given (10 years): anything longer means "for ever" and would
 * only lose precision in Lua's doubles and in the numbers Redis writes back.
 */
export const MAX_SCRIPT_MS = 10 * 365 * 86_400_000;

/** A duration or count as a non-negative integer, at most MAX_SCRIPT_MS. */
function ms(x: number): number {
  return Number.isFinite(x) && x > 0 ? Math.min(MAX_SCRIPT_MS, Math.floor(x)) : 0;
}

/** A latency sample: a positive finite number (at most MAX_SCRIPT_MS), else 0 (not reported). */
function latency(x: number): number {
  return Number.isFinite(x) && x > 0 ? Math.min(MAX_SCRIPT_MS, x) : 0;
}

/** The `{{name}}` constants of includes/config.lua: `cfg` and the tombstone minimum. */
export function scriptConstants(cfg: ScoringConfig): ScriptConstants {
  return {
    minScore: cfg.minScore,
    maxScore: cfg.maxScore,
    floor: cfg.floor,
    maxQuarantines: cfg.maxQuarantines,
    quarantineBaseMs: cfg.quarantineBaseMs,
    quarantineMaxMs: cfg.quarantineMaxMs,
    quarantineJitter: cfg.quarantineJitter,
    scoreAfterQuarantine: cfg.scoreAfterQuarantine,
    rateLimitBackoffBaseMs: cfg.rateLimitBackoffBaseMs,
    rateLimitBackoffMaxMs: cfg.rateLimitBackoffMaxMs,
    ewmaAlpha: cfg.ewmaAlpha,
    healthPass: cfg.healthPass,
    healthFail: cfg.healthFail,
    healthErrorFactor: cfg.healthErrorFactor,
    deltaSuccess: cfg.delta.SUCCESS,
    deltaRateLimited: cfg.delta.RATE_LIMITED,
    deltaBlocked: cfg.delta.BLOCKED,
    deltaProxyError: cfg.delta.PROXY_ERROR,
    deltaTargetError: cfg.delta.TARGET_ERROR,
    deltaAbandoned: cfg.delta.ABANDONED,
    tombstoneMinMs: TOMBSTONE_MIN_MS,
    maxWorkers: MAX_WORKERS_PER_POOL,
    adaptiveStartMs: cfg.adaptive.startMs,
    adaptiveIncrease: cfg.adaptive.increase,
    adaptiveDecrease: cfg.adaptive.decrease,
    adaptiveMargin: cfg.adaptive.margin,
    adaptiveMemoryMs: cfg.adaptive.memoryMs,
    adaptiveMaxMs: cfg.adaptive.maxMs,
  };
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

/**
 * The 22 acquire arguments (acquireLease-7.lua ARGV[1..22]); `now` and then the wanted labels
 * (`labelArgs`) follow. `recordWorker` false: the worker was recorded as seen moments ago (see
 * worker-marks.ts), the script leaves its last-seen time alone.
 */
export function acquireArgs(keys: PoolKeys, p: AcquireParams, hex: string, seed: number, recordWorker = true): ScriptArg[] {
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
    seed,
    p.pacing === "grant" ? "g" : "r",
    ms(p.jitterMs),
    p.adaptive ? "1" : "0",
    ms(p.maxIntervalMs),
    p.shadowKeys.join("\n"),
    p.requestId,
    p.proxyId,
    recordWorker ? (p.fallbackPool === true ? "1" : "0") : "-",
    p.identity ?? "",
  ];
}

/** The wanted labels of an acquire, the last ARGV of acquireLease-7.lua and releaseAndAcquire-15.lua. */
export function labelArgs(p: AcquireParams): string[] {
  return labelNeedles(p.labels);
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

/** The 10 release arguments (releaseLease-8.lua ARGV[1..10]; ARGV[11] is `now`). */
export function releaseArgs(
  keys: PoolKeys,
  lease: LeaseIdParts,
  token: number,
  outcome: OutcomeInput,
  u: number,
  origin: string,
): ScriptArg[] {
  return [
    keys.base,
    lease.hex,
    lease.domainKey,
    lease.proxyId,
    tokenArg(token),
    KIND_CODES[outcome.kind],
    latency(outcome.latencyMs),
    ms(outcome.retryAfterMs),
    u,
    origin,
  ];
}

/** Reports per reportOutcomes-4.lua call: a batch is sent in chunks of this many. */
export const REPORT_CHUNK = 100;

/** KEYS of reportOutcomes-4.lua. */
export function reportKeys(keys: PoolKeys): ScriptKeys<"reportOutcomes"> {
  return [keys.index, keys.quarantine, keys.blacklist, keys.meta];
}

/** ARGV of reportOutcomes-4.lua: P, now, then 7 entries per report. */
export function reportArgs(
  keys: PoolKeys,
  reports: readonly OutcomeReport[],
  now: string,
  random: () => number,
): ScriptArg[] {
  const args: ScriptArg[] = [keys.base, now];
  for (const r of reports) {
    const o = r.outcome;
    args.push(r.proxyId, r.domainKey, KIND_CODES[o.kind], latency(o.latencyMs), ms(o.retryAfterMs), ms(r.banTtlMs), random());
  }
  return args;
}
