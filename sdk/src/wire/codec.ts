import { create } from "@bufbuild/protobuf";
import { durationFromMs, durationMs, timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { Duration, Timestamp } from "@bufbuild/protobuf/wkt";
import { expectsNothing } from "../model/expectations.js";
import type { PolicyExpectations } from "../model/expectations.js";
import type { DomainPolicySpec, LeaseView, LostReasonName, OutcomeKindName, ProxyStateName, ProxyView } from "../model/model.js";
import {
  DomainPolicySchema,
  FallbackClaimSchema,
  LeaseSchema,
  LostReason,
  OutcomeKind,
  PacingMode,
  ProxySchema,
  ProxyState,
  ResponseExpectationsSchema,
} from "../gen/proxybroker/v1/broker_pb.js";
import type {
  DomainPolicy,
  FallbackClaim as WireClaim,
  Lease,
  Proxy as WireProxy,
  ResponseExpectations,
} from "../gen/proxybroker/v1/broker_pb.js";
import type { FallbackClaim } from "../model/fallback-claim.js";

/** Conversions between the wire (protobuf) types and the plain model (ms numbers, names). */

/** Duration → ms; unset → 0. Negative durations are returned as negative numbers. */
export function msOf(d: Duration | undefined): number {
  return d === undefined ? 0 : durationMs(d);
}

/** ms → Duration. */
export function durationOf(ms: number): Duration {
  return durationFromMs(Math.round(ms));
}

/** Timestamp → epoch ms; unset → 0. */
export function epochMsOf(t: Timestamp | undefined): number {
  return t === undefined ? 0 : timestampMs(t);
}

/** Epoch ms → Timestamp; 0 → unset. */
export function timestampOf(ms: number): Timestamp | undefined {
  return ms > 0 ? timestampFromMs(Math.round(ms)) : undefined;
}

const OUTCOME_NAMES: Readonly<Record<OutcomeKind, OutcomeKindName | undefined>> = {
  [OutcomeKind.UNSPECIFIED]: undefined,
  [OutcomeKind.SUCCESS]: "SUCCESS",
  [OutcomeKind.RATE_LIMITED]: "RATE_LIMITED",
  [OutcomeKind.BLOCKED]: "BLOCKED",
  [OutcomeKind.PROXY_ERROR]: "PROXY_ERROR",
  [OutcomeKind.TARGET_ERROR]: "TARGET_ERROR",
  [OutcomeKind.ABANDONED]: "ABANDONED",
};

/** Wire outcome kind → name; undefined for UNSPECIFIED or unknown numbers. */
export function outcomeNameOf(kind: OutcomeKind): OutcomeKindName | undefined {
  return OUTCOME_NAMES[kind];
}

/** Outcome name → wire enum. */
export function outcomeKindOf(name: OutcomeKindName): OutcomeKind {
  return OutcomeKind[name];
}

/** Proxy state name → wire enum. */
export function proxyStateOf(name: ProxyStateName): ProxyState {
  return ProxyState[name];
}

/** Wire proxy state → name (UNSPECIFIED reads as ACTIVE). */
export function proxyStateNameOf(state: ProxyState): ProxyStateName {
  switch (state) {
    case ProxyState.QUARANTINED:
      return "QUARANTINED";
    case ProxyState.BLACKLISTED:
      return "BLACKLISTED";
    case ProxyState.DISABLED:
      return "DISABLED";
    default:
      return "ACTIVE";
  }
}

/** Lost reason name → wire enum. */
export function lostReasonOf(name: LostReasonName): LostReason {
  return LostReason[name];
}

/** Wire lost reason → name (UNSPECIFIED and unknown numbers read as NOT_FOUND). */
export function lostReasonNameOf(reason: LostReason): LostReasonName {
  switch (reason) {
    case LostReason.EXPIRED:
      return "EXPIRED";
    case LostReason.REVOKED:
      return "REVOKED";
    default:
      return "NOT_FOUND";
  }
}

/** Model proxy → wire proxy. */
export function proxyToWire(p: ProxyView): WireProxy {
  return create(ProxySchema, {
    id: p.id,
    url: p.url,
    tier: p.tier,
    labels: { ...p.labels },
    score: p.score,
    state: proxyStateOf(p.state),
    latencyEwma: p.latencyEwmaMs > 0 ? durationOf(p.latencyEwmaMs) : undefined,
    successCount: BigInt(p.successCount),
    failureCount: BigInt(p.failureCount),
    lastUsedBy: p.lastUsedBy,
    lastUsedTime: timestampOf(p.lastUsedAt),
    quarantineUntil: timestampOf(p.quarantineUntil),
    quarantineCount: p.quarantineCount,
    exitIp: p.exitIp,
  });
}

/** Wire proxy → model proxy. */
export function proxyFromWire(p: WireProxy): ProxyView {
  return {
    id: p.id,
    url: p.url,
    tier: p.tier,
    labels: { ...p.labels },
    score: p.score,
    state: proxyStateNameOf(p.state),
    latencyEwmaMs: msOf(p.latencyEwma),
    successCount: Number(p.successCount),
    failureCount: Number(p.failureCount),
    lastUsedBy: p.lastUsedBy,
    lastUsedAt: epochMsOf(p.lastUsedTime),
    quarantineUntil: epochMsOf(p.quarantineUntil),
    quarantineCount: p.quarantineCount,
    exitIp: p.exitIp,
  };
}

/** Model lease → wire lease; `reusable`: the holder may keep it for more requests (kept leases). */
export function leaseToWire(l: LeaseView, reusable = false): Lease {
  return create(LeaseSchema, {
    leaseId: l.leaseId,
    fencingToken: BigInt(l.fencingToken),
    pool: l.pool,
    domain: l.domainKey,
    proxy: proxyToWire(l.proxy),
    expireTime: timestampOf(l.expireAt),
    sessionKey: l.sessionKey,
    sessionRebound: l.sessionRebound,
    reusable,
    ...(l.ttlMs >= 0 ? { ttl: durationOf(l.ttlMs) } : {}),
    // no policy names the host and none learned, or a retried request's grant (intervalMs -1)
    pacingUnknown: l.intervalMs < 0,
  });
}

/** Wire lease → model lease (a lease without proxy is a protocol error). */
export function leaseFromWire(l: Lease): LeaseView {
  if (l.proxy === undefined) throw new Error(`lease ${l.leaseId} carries no proxy`);
  return {
    leaseId: l.leaseId,
    fencingToken: Number(l.fencingToken),
    pool: l.pool,
    domainKey: l.domain,
    proxy: proxyFromWire(l.proxy),
    expireAt: epochMsOf(l.expireTime),
    sessionKey: l.sessionKey,
    sessionRebound: l.sessionRebound,
    // the wire says only whether the pair was unpaced and the broker lets it be kept
    intervalMs: l.reusable ? 0 : -1,
    ttlMs: l.ttl === undefined ? -1 : msOf(l.ttl),
  };
}

/** Model policy → wire policy (unset fields stay unset). */
export function policyToWire(p: DomainPolicySpec): DomainPolicy {
  return create(DomainPolicySchema, {
    pattern: p.pattern,
    group: p.group,
    maxConcurrency: p.maxConcurrency,
    minInterval: p.minIntervalMs > 0 ? durationOf(p.minIntervalMs) : undefined,
    defaultTtl: p.defaultTtlMs > 0 ? durationOf(p.defaultTtlMs) : undefined,
    banTtl: p.banTtlMs > 0 ? durationOf(p.banTtlMs) : undefined,
    pacing: p.pacing === "grant" ? PacingMode.AFTER_GRANT : PacingMode.AFTER_RELEASE,
    jitter: p.jitterMs > 0 ? durationOf(p.jitterMs) : undefined,
    maxInterval: p.maxIntervalMs > 0 ? durationOf(p.maxIntervalMs) : undefined,
    fixedInterval: p.fixedInterval,
    expectations: p.expectations === undefined || expectsNothing(p.expectations) ? undefined : expectationsToWire(p.expectations),
    isolationGroup: p.isolationGroup ?? "",
    affinityWindow: (p.affinityWindowMs ?? 0) > 0 ? durationOf(p.affinityWindowMs ?? 0) : undefined,
  });
}

/**
 * Wire policy → model policy, as it stands (durations may be negative: the broker validates
 * policies it is given; a client takes the broker's as they come).
 */
export function policyFromWire(p: DomainPolicy): DomainPolicySpec {
  return {
    pattern: p.pattern,
    group: p.group,
    maxConcurrency: p.maxConcurrency,
    minIntervalMs: msOf(p.minInterval),
    defaultTtlMs: msOf(p.defaultTtl),
    banTtlMs: msOf(p.banTtl),
    pacing: p.pacing === PacingMode.AFTER_GRANT ? "grant" : "release",
    jitterMs: msOf(p.jitter),
    maxIntervalMs: msOf(p.maxInterval),
    fixedInterval: p.fixedInterval,
    ...(p.expectations === undefined || expectsNothing(p.expectations) ? {} : { expectations: expectationsFromWire(p.expectations) }),
    ...isolationOf(p.isolationGroup, msOf(p.affinityWindow)),
  };
}

/** The isolation fields of a policy, present only when set. */
function isolationOf(group: string, affinityMs: number): Pick<DomainPolicySpec, "isolationGroup" | "affinityWindowMs"> {
  return { ...(group === "" ? {} : { isolationGroup: group }), ...(affinityMs === 0 ? {} : { affinityWindowMs: affinityMs }) };
}

function expectationsToWire(e: PolicyExpectations): ResponseExpectations {
  return create(ResponseExpectationsSchema, {
    blockMarkers: [...e.blockMarkers],
    requiredMarkers: [...e.requiredMarkers],
    minBytes: e.minBytes,
    slowDownPatterns: [...e.slowDownPatterns],
  });
}

function expectationsFromWire(e: ResponseExpectations): PolicyExpectations {
  return {
    blockMarkers: [...e.blockMarkers],
    requiredMarkers: [...e.requiredMarkers],
    minBytes: e.minBytes,
    slowDownPatterns: [...e.slowDownPatterns],
  };
}

/** A fallback claim on the wire (`Ping.claim`). */
export function claimToWire(c: FallbackClaim): WireClaim {
  return create(FallbackClaimSchema, {
    version: BigInt(c.version),
    members: [...c.members],
    keys: c.keys.map((k) => ({ domain: k.domainKey, shareKey: k.shareKey, whole: k.whole, untilTime: timestampOf(k.untilMs) })),
  });
}

/** A fallback claim off the wire, unchecked (the broker checks it: src/grpc/validate-claim.ts). */
export function claimFromWire(c: WireClaim): FallbackClaim {
  return {
    version: Number(c.version),
    members: [...c.members],
    keys: c.keys.map((k) => ({ domainKey: k.domain, shareKey: k.shareKey, whole: k.whole, untilMs: epochMsOf(k.untilTime) })),
  };
}
