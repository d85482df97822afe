/**
 * Keys and ARGV of the lease scripts, built from the store's parameters (each ARGV by name, in
 * the order of its list in script-args.ts), and the constants baked into the scripts. The numbers of the `ScoringConfig` are baked into the script text when the
 * scripts are loaded (`scriptConstants`), so the TypeScript config stays their only source and no
 * call carries them.
 */
import type { AcquireParams, OutcomeKindName, OutcomeInput, OutcomeReport } from "@proxybroker/sdk/model";
import type { ScoringConfig } from "@proxybroker/sdk/model";
import { MAX_WORKERS_PER_POOL } from "@proxybroker/sdk/model";
import { GAP_MIN_MS } from "@proxybroker/sdk/engine";
import type { PoolKeys } from "./keys.js";
import { labelNeedles } from "./labels.js";
import type { LeaseIdParts } from "./lease-id.js";
import type { ScriptConstants, ScriptKeys } from "./scripts.js";
import { argv, type ScriptArg } from "./script-args.js";
import { keyv } from "./script-keys.js";

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

/** The `{{name}}` constants of includes/config.lua: `cfg`, the tombstone minimum and the shortest gap lease (includes/reservations.lua). */
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
    gapMinMs: GAP_MIN_MS,
  };
}

/** KEYS of acquireLease-7.lua. */
export function acquireKeys(keys: PoolKeys, p: AcquireParams): ScriptKeys<"acquireLease"> {
  return keyv("acquireKeys", {
    meta: keys.meta,
    quarantine: keys.quarantine,
    index: keys.index,
    candidates: keys.candidates(p.tier),
    busy: keys.busy(p.domainKey),
    workers: keys.workers,
    session: keys.session(p.sessionKey),
  });
}

/**
 * The acquire arguments (list `acquire`), each field of the request where acquire-fields.ts
 * places it; acquireLease-7.lua takes `now` and then the wanted labels (`labelArgs`) after them. `record.worker` false: the worker was recorded as seen moments
 * ago (see worker-marks.ts), the script leaves its last-seen time alone; `record.domainUse` false:
 * its use of the domain-key likewise.
 */
export function acquireArgs(
  keys: PoolKeys,
  p: AcquireParams,
  draw: { readonly hex: string; readonly seed: number },
  record: { readonly worker: boolean; readonly domainUse: boolean } = { worker: true, domainUse: true },
): ScriptArg[] {
  const { hex, seed } = draw;
  return argv("acquire", {
    base: keys.base,
    policyVersion: p.policyVersion,
    domainKey: p.domainKey,
    workerId: p.workerId,
    ttlMs: ms(p.ttlMs),
    maxConcurrency: Math.max(1, ms(p.maxConcurrency)),
    minIntervalMs: ms(p.minIntervalMs),
    banTtlMs: ms(p.banTtlMs),
    sessionKey: p.sessionKey,
    sessionTtlMs: ms(p.sessionTtlMs),
    tier: p.tier,
    hex,
    seed,
    anchor: p.pacing === "grant" ? "g" : "r",
    jitterMs: ms(p.jitterMs),
    adaptive: p.adaptive ? "1" : "0",
    maxIntervalMs: ms(p.maxIntervalMs),
    shadowKeys: p.shadowKeys.join("\n"),
    requestId: p.requestId,
    proxyId: p.proxyId,
    fallbackPool: record.worker ? (p.fallbackPool === true ? "1" : "0") : "-",
    yieldsLeases: p.yieldsLeases === true ? "1" : "0",
    identity: p.identity ?? "",
    domainUseMs: record.domainUse && p.domainUseMs !== undefined && p.domainUseMs > 0 ? ms(p.domainUseMs) : "",
    isolationGroup: p.isolation?.group ?? "",
    affinityMs: ms(p.isolation?.affinityMs ?? 0),
    formerGroups: p.isolation === undefined ? "" : p.isolation.formerGroups.join("\n"),
    joinedKeys: p.isolation?.joinedKeys === undefined ? "" : p.isolation.joinedKeys.join("\n"),
    grantUnknownExits: p.grantUnknownExits === false ? "0" : "1",
    honorsTtl: p.honorsTtl === true ? "1" : "0",
  });
}

/** The wanted labels of an acquire, the last arguments of acquireLease-7.lua and releaseAndAcquire-15.lua. */
export function labelArgs(p: AcquireParams): string[] {
  return labelNeedles(p.labels);
}

/** KEYS of releaseLease-8.lua. */
export function releaseKeys(keys: PoolKeys, lease: LeaseIdParts): ScriptKeys<"releaseLease"> {
  return keyv("releaseKeys", {
    lease: keys.lease(lease.hex),
    pair: keys.pair(lease.domainKey, lease.proxyId),
    busy: keys.busy(lease.domainKey),
    proxy: keys.proxy(lease.proxyId),
    index: keys.index,
    quarantine: keys.quarantine,
    blacklist: keys.blacklist,
    meta: keys.meta,
  });
}

/** The release arguments (list `release`); releaseLease-8.lua takes `now` after them. */
export function releaseArgs(
  keys: PoolKeys,
  lease: LeaseIdParts,
  token: number,
  outcome: OutcomeInput,
  u: number,
  origin: string,
): ScriptArg[] {
  return argv("release", {
    base: keys.base,
    hex: lease.hex,
    domainKey: lease.domainKey,
    proxyId: lease.proxyId,
    token: tokenArg(token),
    kind: KIND_CODES[outcome.kind],
    latencyMs: latency(outcome.latencyMs),
    retryAfterMs: ms(outcome.retryAfterMs),
    u,
    origin,
  });
}

/** Reports per reportOutcomes-4.lua call: a batch is sent in chunks of this many. */
export const REPORT_CHUNK = 100;

/** KEYS of reportOutcomes-4.lua. */
export function reportKeys(keys: PoolKeys): ScriptKeys<"reportOutcomes"> {
  return keyv("reportOutcomesKeys", { index: keys.index, quarantine: keys.quarantine, blacklist: keys.blacklist, meta: keys.meta });
}

/** ARGV of reportOutcomes-4.lua: list `reportOutcomes`, then a `report` per report. */
export function reportArgs(keys: PoolKeys, reports: readonly OutcomeReport[], now: string, random: () => number): ScriptArg[] {
  const args = argv("reportOutcomes", { base: keys.base, now });
  for (const r of reports) {
    const o = r.outcome;
    args.push(
      ...argv("report", {
        proxyId: r.proxyId,
        domainKey: r.domainKey,
        kind: KIND_CODES[o.kind],
        latencyMs: latency(o.latencyMs),
        retryAfterMs: ms(o.retryAfterMs),
        banTtlMs: ms(r.banTtlMs),
        u: random(),
      }),
    );
  }
  return args;
}
