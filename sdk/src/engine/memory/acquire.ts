/**
 * Internal to the in-memory engine: acquire (store-semantics §acquire, steps 1–8).
 */
import type { AcquireParams, AcquireResult } from "../../model/model.js";
import type { EngineState } from "./engine-state.js";
import { newLeaseId } from "./ids.js";
import { eligibleAt, pairEligible, pairOf, refreshBusy } from "./pair.js";
import type { DomainState, PoolState } from "./pool-state.js";
import { viewOf, type ProxyRecord } from "./records.js";
import { returnFromQuarantine } from "./score-change.js";
import { choose, matchesRequest } from "./selection.js";

/** Quarantined proxies returned per acquire at most (step 2). */
const QUARANTINE_RETURNS = 16;
/** Lease records looked at for pruning per acquire. */
const LEASE_SWEEP = 4;
/** Session bindings looked at for pruning per acquire. */
const SESSION_SWEEP = 2;

/** Try to grant one lease at `now`; see docs/store-semantics.md. */
export function acquire(state: EngineState, params: AcquireParams, now: number): AcquireResult {
  const pool = state.pool(params.pool);
  if (params.policyVersion !== pool.policyVersion) return { kind: "stale-policy", version: pool.policyVersion };
  returnFromQuarantine(state.ctx, pool, now, QUARANTINE_RETURNS);
  const domain = pool.domain(params.domainKey);
  while (domain.busy.popUpTo(now) !== undefined);
  pool.workers.set(params.workerId, now);
  state.leases.sweep(now, LEASE_SWEEP);
  pool.sessions.sweep(now, SESSION_SWEEP);

  let rebound = false;
  if (params.sessionKey !== "") {
    const session = pool.sessions.live(params.sessionKey, now);
    if (session !== undefined) {
      const bound = pool.proxies.get(session.proxyId);
      const banUntil = domain.pairs.get(session.proxyId)?.banUntil ?? 0;
      if (bound !== undefined && bound.state === "ACTIVE" && matchesRequest(bound, params) && banUntil <= now) {
        if (pairEligible(domain, bound.id, now, params.maxConcurrency)) {
          return grant(state, pool, domain, bound, params, now, false);
        }
        return { kind: "denied", retryAfterMs: eligibleAt(domain, bound.id, now, params.maxConcurrency) - now };
      }
      rebound = true;
    }
  }

  const candidates = pool.candidates(params.tier);
  const chosen = choose(candidates, domain, params, now, state.ctx.random);
  if (chosen !== undefined) return grant(state, pool, domain, chosen, params, now, rebound);
  return { kind: "denied", retryAfterMs: retryAfter(pool, domain, candidates.size, now) };
}

/**
 * Step 7. With no candidates at all, the earliest quarantine return (busy entries then belong to
 * proxies that are gone from the list); otherwise the earliest busy entry of the domain-key; -1
 * when neither is known.
 */
function retryAfter(pool: PoolState, domain: DomainState, candidates: number, now: number): number {
  const next = candidates === 0 ? pool.quarantine.peek() : domain.busy.peek();
  return next === undefined ? -1 : Math.max(0, next.time - now);
}

/** Step 8: grant `rec` on the pair (rec, domain-key). */
function grant(
  state: EngineState,
  pool: PoolState,
  domain: DomainState,
  rec: ProxyRecord,
  params: AcquireParams,
  now: number,
  sessionRebound: boolean,
): AcquireResult {
  const pair = pairOf(domain, rec.id);
  pair.fence += 1;
  const leaseId = newLeaseId();
  const expireAt = now + params.ttlMs;
  pair.holders.set(leaseId, expireAt);
  pair.maxConcurrency = params.maxConcurrency;
  pair.banTtlMs = params.banTtlMs;
  if (params.minIntervalMs > 0) pair.nextAt = now + params.minIntervalMs;
  refreshBusy(domain, rec.id, pair, now);
  rec.lastUsedBy = params.workerId;
  rec.lastUsedAt = now;
  state.leases.add({
    leaseId,
    pool: pool.name,
    domainKey: params.domainKey,
    proxyId: rec.id,
    token: pair.fence,
    expireAt,
    ttlMs: params.ttlMs,
    longestTtlMs: params.ttlMs,
    workerId: params.workerId,
    sessionKey: params.sessionKey,
    released: false,
    releasedAt: 0,
    lateOutcomeApplied: false,
  });
  if (params.sessionKey !== "") pool.sessions.bind(params.sessionKey, rec.id, now + params.sessionTtlMs);
  return {
    kind: "granted",
    lease: {
      leaseId,
      fencingToken: pair.fence,
      pool: pool.name,
      domainKey: params.domainKey,
      proxy: viewOf(rec),
      expireAt,
      sessionKey: params.sessionKey,
      sessionRebound,
    },
  };
}
