/**
 * Internal to the in-memory engine: the mutable records it keeps, and the copy-out of a proxy.
 */
import type { PacingAnchor, ProxyStateName, ProxyView } from "../../model/model.js";
import type { GrantPacing } from "../../model/scoring.js";
import { NO_ISOLATION, type PairIsolation } from "./isolation.js";

/** Everything kept per proxy; `ProxyView` with writable fields. */
export type ProxyRecord = { -readonly [K in keyof ProxyView]: ProxyView[K] };

/** State of one (proxy, domain-key) pair. */
export interface PairState {
  /** Last fencing token handed out: max(previous + 1, grant time in µs). */
  fence: number;
  /** Pacing: no grant before this. */
  nextAt: number;
  banUntil: number;
  coolUntil: number;
  /** Consecutive RATE_LIMITED outcomes. */
  rateLimits: number;
  /** Live (and not yet pruned expired) holders: lease id → expiry. */
  readonly holders: Map<string, number>;
  /** `maxConcurrency` of the last grant. */
  maxConcurrency: number;
  /** `banTtlMs` of the last grant. */
  banTtlMs: number;
  /** The interval of the last grant, jitter included. */
  intervalMs: number;
  /**
   * What the interval is measured from: the last grant, and with the "release" anchor the last
   * end too (0 = never granted). A grant needs anchorAt + the domain-key's interval *now* ≤ now,
   * so a raised interval (adaptive pacing) holds at once for every pair.
   */
  anchorAt: number;
  /** What that interval is measured from. */
  anchor: PacingAnchor;
  /** What the last grant knew of pacing, for adaptive pacing when its outcome comes back. */
  pacing: GrantPacing & { readonly adaptive: boolean };
  /** The isolation group and affinity window of the last grant (G8), which renew and release use. */
  isolation: PairIsolation;
}

/** A lease, live or kept as a tombstone after it ended. */
export interface LeaseRecord {
  readonly leaseId: string;
  readonly pool: string;
  readonly domainKey: string;
  readonly proxyId: string;
  readonly token: number;
  expireAt: number;
  /** The ttl of the grant, used by renews that give none. */
  readonly ttlMs: number;
  /** The longest ttl the lease ever had (grant or renew): sets how long its tombstone is kept. */
  longestTtlMs: number;
  readonly workerId: string;
  readonly sessionKey: string;
  /** Ended by a release (not by expiry). */
  released: boolean;
  /** Epoch ms of the release; meaningful only when `released`. */
  releasedAt: number;
  /** An outcome was applied by a release that came after expiry (answered EXPIRED). */
  lateOutcomeApplied: boolean;
}

/** A sticky session binding. */
export interface SessionRecord {
  readonly key: string;
  proxyId: string;
  expireAt: number;
}

/** A new pair with nothing recorded. */
export function newPair(): PairState {
  return {
    fence: 0,
    nextAt: 0,
    banUntil: 0,
    coolUntil: 0,
    rateLimits: 0,
    holders: new Map(),
    maxConcurrency: 1,
    banTtlMs: 0,
    intervalMs: 0,
    anchorAt: 0,
    anchor: "release",
    pacing: { baseMs: 0, policyMinMs: 0, maxIntervalMs: 0, adaptive: true },
    isolation: NO_ISOLATION,
  };
}

/** A snapshot of a proxy record that later changes do not affect. */
export function viewOf(rec: ProxyRecord): ProxyView {
  return { ...rec, labels: { ...rec.labels } };
}

/** Whether a proxy in this state may be chosen. */
export function isActive(state: ProxyStateName): boolean {
  return state === "ACTIVE";
}
