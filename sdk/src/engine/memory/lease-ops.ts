/**
 * Internal to the in-memory engine: renew and release (store-semantics §renew, §release).
 */
import type { ReleaseParams, ReleaseResult, RenewParams, RenewResult } from "../../model/model.js";
import { acquire } from "./acquire.js";
import type { EngineState } from "./engine-state.js";
import { applyOutcome } from "./outcome.js";
import { anchorEnd, endHolder, pairOf, refreshBusy } from "./pair.js";
import type { LeaseRecord } from "./records.js";
import { holdOnRelease, holdOnRenew } from "./isolation-rules.js";
import { pairReservedUntil } from "./reservations.js";

/**
 * Extend a held lease to now + ttl (the lease's own ttl when `ttlMs` is 0) — on a pair reserved
 * for a silent worker from a later moment, to that moment at most (`pairReservedUntil`).
 */
export function renew(state: EngineState, params: RenewParams, now: number): RenewResult {
  const lease = state.leases.get(params.leaseId);
  if (lease === undefined || lease.released) return { kind: "lost", reason: "NOT_FOUND" };
  if (params.fencingToken !== lease.token) return { kind: "lost", reason: "REVOKED" };
  const pool = state.pool(lease.pool);
  const worker = params.workerId ?? "";
  if (worker !== "" && (pool.workers.get(worker) ?? Number.NEGATIVE_INFINITY) >= (params.liveSince ?? 0)) pool.workers.see(worker, now);
  const domain = pool.domain(lease.domainKey);
  const pair = pairOf(domain, lease.proxyId);
  if (lease.expireAt <= now) {
    if (endHolder(pair, lease.leaseId, lease.expireAt)) refreshBusy(domain, lease.proxyId, pair, now);
    return { kind: "lost", reason: "EXPIRED" };
  }
  // the isolation group of the lease's domain-key now (G8), else of its grant
  const isolation = params.isolationOf?.(lease.pool, lease.domainKey) ?? pair.isolation;
  // Reserved for another worker's fallback share: not extended; it runs out at its expiry.
  const ask = { domainKey: lease.domainKey, group: isolation.group, workerId: worker, honorsTtl: params.honorsTtl === true };
  const until = pairReservedUntil(pool, lease.proxyId, ask, now);
  if (until === 0) return { kind: "lost", reason: "REVOKED" };
  if (isolation.group !== "") pair.isolation = { group: isolation.group, affinityMs: isolation.affinityMs };
  const asked = params.ttlMs > 0 ? params.ttlMs : lease.ttlMs;
  const ttlMs = until === undefined ? asked : Math.min(asked, until - now);
  pool.longestTtl.note(ttlMs, now);
  lease.expireAt = now + ttlMs;
  lease.longestTtlMs = Math.max(lease.longestTtlMs, ttlMs);
  pair.holders.set(lease.leaseId, lease.expireAt);
  refreshBusy(domain, lease.proxyId, pair, now);
  // (a key in no group now writes no hold; the hold of its grant runs out by itself)
  if (isolation.group !== "")
    holdOnRenew({ holds: pool.isolation, pair, proxyId: lease.proxyId, domainKey: lease.domainKey }, { now, expireAt: lease.expireAt });
  return { kind: "renewed", expireAt: lease.expireAt, ttlMs };
}

/** Release with an outcome; with `next`, acquire in the same step and attach its result. */
export function release(state: EngineState, params: ReleaseParams, now: number): ReleaseResult {
  const result = releaseOnly(state, params, now);
  if (params.next === undefined) return result;
  return { ...result, next: acquire(state, params.next, now) };
}

function releaseOnly(state: EngineState, params: ReleaseParams, now: number): ReleaseResult {
  const lease = state.leases.get(params.leaseId);
  if (lease === undefined) return { kind: "lost", reason: "NOT_FOUND" };
  if (params.fencingToken !== lease.token) return { kind: "lost", reason: "REVOKED" };
  if (lease.released) return { kind: "released" };
  // A retried release of an expired lease: its outcome was applied once already.
  if (lease.lateOutcomeApplied) return { kind: "lost", reason: "EXPIRED" };
  end(state, lease, params, now);
  if (lease.expireAt <= now) {
    lease.lateOutcomeApplied = true;
    return { kind: "lost", reason: "EXPIRED" };
  }
  lease.released = true;
  lease.releasedAt = now;
  return { kind: "released" };
}

/** Drop the holder and apply the outcome; a live lease's isolation hold ends with it (+ affinity). */
function end(state: EngineState, lease: LeaseRecord, params: ReleaseParams, now: number): void {
  const pool = state.pool(lease.pool);
  const domain = pool.domain(lease.domainKey);
  const pair = pairOf(domain, lease.proxyId);
  // the lease ends now, whenever it expired: its request may have run until this release
  pair.holders.delete(lease.leaseId);
  anchorEnd(pair, now);
  // an expired lease keeps the hold it had (its expiry + affinity)
  if (lease.expireAt > now) holdOnRelease({ holds: pool.isolation, pair, proxyId: lease.proxyId, domainKey: lease.domainKey }, now);
  applyOutcome(state.ctx, pool, domain, lease.proxyId, pair, params.outcome, now);
}
