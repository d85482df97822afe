/**
 * Internal to the in-memory engine: acquire (store-semantics §acquire), step by step.
 */
import type { AcquireParams, AcquireResult } from "../../model/model.js";
import type { EngineState } from "./engine-state.js";
import { newLeaseId } from "./ids.js";
import { baseInterval } from "../../model/scoring.js";
import { busyUnder, eligibleAt, liveUnder, pacedUntil, pairEligible, pairOf, refreshBusy } from "./pair.js";
import type { DomainState, PoolState } from "./pool-state.js";
import { viewOf, type ProxyRecord } from "./records.js";
import { returnFromQuarantine } from "./score-change.js";
import { choose, matchesRequest } from "./selection.js";
import { sweepDomains, sweepPairs } from "./prune.js";
import { holdOnGrant, isolationCheck, type IsolationCheck } from "./isolation-rules.js";
import { askOf, domainReservedUntil, pairReservedUntil, proxyReservedUntil, type ReservedAsk } from "./reservations.js";
import { exitCheck, type ExitCheck } from "./exit-rules.js";

/** Quarantined proxies returned per acquire at most (step returnQuarantined). */
const QUARANTINE_RETURNS = 16;
/** Lease records looked at for pruning per acquire. */
const LEASE_SWEEP = 4;
/** Session bindings looked at for pruning per acquire. */
const SESSION_SWEEP = 2;
/** Request log entries looked at for pruning per acquire. */
const REQUEST_SWEEP = 2;
/** Domain-keys of the pool, and pairs of the acquire's domain-key, looked at for pruning per acquire. */
const DOMAIN_SWEEP = 1;
const PAIR_SWEEP = 2;
/** Isolation hold records (group, proxy) looked at for pruning per acquire. */
const HOLD_SWEEP = 2;

/**
 * Try to grant one lease at `now`; see docs/store-semantics.md §acquire. The steps of the doc, in
 * order, under the names of the Redis script's (src/store/redis/lua/includes/acquireCore.lua, one
 * include per step); a step that answers a result ends the acquire.
 */
export function acquire(state: EngineState, params: AcquireParams, now: number): AcquireResult {
  const pool = state.pool(params.pool);
  const stale = checkVersion(pool, params, now);
  if (stale !== undefined) return stale;
  const again = replayRequest(state, pool, params, now);
  if (again !== undefined) return again;
  returnQuarantined(state, pool, now);
  const domain = dropStaleBusy(pool, params, now);
  const refused = admitWorker(pool, params, now);
  if (refused !== undefined) return refused;
  const req = prepareChoice(state, pool, domain, params, now);
  const bound = pickBound(req);
  if (bound.kind === "denied") return bound;
  if (bound.kind === "bound") return grant(req, bound.rec, false);
  const picked = pickCandidate(req);
  if (picked.rec === undefined) return deny(req, picked.candidates, picked.freeAt);
  return grant(req, picked.rec, bound.rebound);
}

/** One acquire as its steps from prepareChoice on see it. */
interface Request {
  readonly state: EngineState;
  readonly pool: PoolState;
  readonly domain: DomainState;
  readonly params: AcquireParams;
  readonly now: number;
  /** The interval the domain-key runs under now, before jitter. */
  readonly base: number;
  /** What the acquire's isolation groups hold back; undefined: nothing. */
  readonly isolation: IsolationCheck | undefined;
  /** Whom reservations are checked against. */
  readonly ask: ReservedAsk;
  /** What exit IPs hold back (G9); undefined: nothing (no proxy has a sibling or waits for a probe). */
  readonly exits: ExitCheck | undefined;
}

/** A denial. */
type Denied = Extract<AcquireResult, { kind: "denied" }>;

/**
 * Step checkVersion: the request's policy version against the pool's (stale); after a loss of
 * state, nothing until leases from before can no longer be in use (denied). Undefined: go on.
 */
function checkVersion(pool: PoolState, params: AcquireParams, now: number): AcquireResult | undefined {
  if (params.policyVersion !== pool.policyVersion) return { kind: "stale-policy", version: pool.policyVersion };
  if (pool.grantsFrom > now) return { kind: "denied", retryAfterMs: pool.grantsFrom - now };
  return undefined;
}

/**
 * Step replayRequest: the lease this request was granted before, when it is still held (a retry
 * gets it again); undefined when the request has no id or none is held. Prunes a few entries of
 * the request log first.
 */
function replayRequest(state: EngineState, pool: PoolState, params: AcquireParams, now: number): AcquireResult | undefined {
  pool.requests.sweep(now, REQUEST_SWEEP);
  if (params.requestId === "") return undefined;
  const leaseId = pool.requests.leaseOf(params.workerId, params.requestId, now);
  const lease = leaseId === undefined ? undefined : state.leases.get(leaseId);
  if (lease === undefined || lease.released || lease.expireAt <= now) return undefined;
  const rec = pool.proxies.get(lease.proxyId);
  if (rec === undefined) return undefined;
  return {
    kind: "granted",
    lease: {
      leaseId: lease.leaseId,
      fencingToken: lease.token,
      pool: pool.name,
      domainKey: lease.domainKey,
      proxy: viewOf(rec),
      expireAt: lease.expireAt,
      sessionKey: lease.sessionKey,
      sessionRebound: false,
      intervalMs: -1,
      ttlMs: lease.expireAt - now,
    },
  };
}

/** Step returnQuarantined: QUARANTINED proxies whose time is up back to ACTIVE (at most QUARANTINE_RETURNS). */
function returnQuarantined(state: EngineState, pool: PoolState, now: number): void {
  returnFromQuarantine(state.ctx, pool, now, QUARANTINE_RETURNS);
}

/**
 * Step dropStaleBusy: the domain-key's state, its busy entries ≤ now dropped. Prunes a few stale
 * domain-keys of the pool first (before the domain-key is looked up: a sweep may drop an empty
 * one) and a few stale pairs of the domain-key.
 */
function dropStaleBusy(pool: PoolState, params: AcquireParams, now: number): DomainState {
  sweepDomains(pool, now, DOMAIN_SWEEP);
  const domain = pool.domain(params.domainKey);
  sweepPairs(domain, now, PAIR_SWEEP);
  while (domain.busy.popUpTo(now) !== undefined);
  return domain;
}

/**
 * Step admitWorker: the worker is seen (as keeping a fallback pool, as yielding, as the request
 * says). Every proxy of the domain-key (or its isolation group) reserved for a silent worker that
 * may use them from its fallback pool: refused — or, to a caller that keeps to its TTL, granted
 * only until that worker may use them (`domainReservedUntil`) — and not recorded as a use of the
 * domain-key (the caller must not become established for it while that worker may be on it
 * alone, §7); otherwise its use of the domain-key is recorded (fallback shares follow them),
 * granted or not.
 */
function admitWorker(pool: PoolState, params: AcquireParams, now: number): Denied | undefined {
  pool.workers.see(params.workerId, now);
  if (params.fallbackPool === true) pool.fallbackPools.see(params.workerId, now);
  if (params.yieldsLeases === true) pool.yielding.see(params.workerId, now);
  const reserved = domainReservedUntil(pool, askOf(params), now);
  if (reserved === 0) return { kind: "denied", retryAfterMs: -1 };
  if (reserved === undefined && params.domainUseMs !== undefined && params.domainUseMs > 0)
    pool.domainUses.record(params.workerId, params.domainKey, now, params.domainUseMs);
  return undefined;
}

/**
 * Step prepareChoice: what choosing a proxy reads: the domain-key's interval now (before jitter),
 * the holds of other domain-keys of the acquire's isolation groups (G8), whom reservations are
 * checked against. Prunes a few lease records, session bindings and isolation holds first.
 */
function prepareChoice(state: EngineState, pool: PoolState, domain: DomainState, params: AcquireParams, now: number): Request {
  state.leases.sweep(now, LEASE_SWEEP);
  pool.sessions.sweep(now, SESSION_SWEEP);
  pool.isolation.sweep(now, HOLD_SWEEP);
  const base = baseInterval(params.minIntervalMs, domain.adaptive.adaptiveMs, params.adaptive);
  const isolation = isolationCheck(pool.isolation, params, now, (key, proxyId, at) => liveUnder(pool.domains.get(key), proxyId, at));
  const exits = exitCheck({ exits: pool.exits, domain, params, now, baseMs: base });
  return { state, pool, domain, params, now, base, isolation, ask: askOf(params), exits };
}

/** What pickBound found: the proxy to grant, a denial, or none (choose; `rebound`: the session's proxy cannot serve). */
type Bound = { readonly kind: "bound"; readonly rec: ProxyRecord } | { readonly kind: "free"; readonly rebound: boolean } | Denied;

/**
 * Step pickBound: a request bound to one proxy, by `proxyId` (a fallback lease handed back) or by
 * its session's live binding. That proxy when it can be granted now, else a denial with when it
 * frees; "free" when the request is bound to none, or its session's proxy cannot serve it at all
 * (removed, not ACTIVE, no longer matching, banned for the domain-key — its own pair or a sibling's
 * of one exit IP — or waiting for a probe the request requires: rebound).
 */
function pickBound(req: Request): Bound {
  const { pool, params, now } = req;
  if (params.proxyId !== "") {
    const rec = pool.proxies.get(params.proxyId);
    if (rec === undefined || !canServe(req, rec)) return { kind: "denied", retryAfterMs: -1 };
    return fromBound(req, rec);
  }
  if (params.sessionKey === "") return { kind: "free", rebound: false };
  const session = pool.sessions.live(params.sessionKey, now);
  if (session === undefined) return { kind: "free", rebound: false };
  const bound = pool.proxies.get(session.proxyId);
  if (bound !== undefined && canServe(req, bound)) return fromBound(req, bound);
  return { kind: "free", rebound: true };
}

/**
 * Whether a bound proxy can serve the request at all (else a session rebinds): ACTIVE, matching,
 * its pair (or a sibling's, G9) not banned for the domain-key, not waiting for a probe the
 * request requires.
 */
function canServe(req: Request, rec: ProxyRecord): boolean {
  const { domain, params, now, exits } = req;
  if (rec.state !== "ACTIVE" || !matchesRequest(rec, params) || (domain.pairs.get(rec.id)?.banUntil ?? 0) > now) return false;
  return exits === undefined || (!exits.awaitsProbe(rec.id) && !exits.siblingBanned(rec.id));
}

/**
 * Until when the proxy is held back by what the domain-key's own pairs do not show: busy under an
 * earlier domain-key of the host, held by another domain-key of its isolation group, or by its
 * siblings of one exit IP (G9) (0: none of these).
 */
function heldElsewhere(req: Request, proxyId: string): number {
  const own = ownElsewhere(req, proxyId);
  return req.exits === undefined
    ? own
    : Math.max(
        own,
        req.exits.heldUntil(proxyId, (id) => ownElsewhere(req, id)),
      );
}

/** Until when the proxy itself is busy under a shadow domain-key or held in an isolation group (0: neither). */
function ownElsewhere(req: Request, proxyId: string): number {
  const shadow = busyUnderShadows(req.pool, req.params, proxyId, req.now);
  return req.isolation === undefined ? shadow : Math.max(shadow, req.isolation.heldUntil(proxyId, req.now));
}

/** The one proxy a request is bound to (its session's, or `proxyId`) when it can be granted now, or when it frees. */
function fromBound(req: Request, bound: ProxyRecord): Bound {
  const { domain, params, now, base } = req;
  if (proxyReservedUntil(req.pool, bound.id, req.ask, now) === 0) return { kind: "denied", retryAfterMs: -1 };
  const shadow = heldElsewhere(req, bound.id);
  const eligibleNow = pairEligible(domain, bound.id, now, params.maxConcurrency) && pacedUntil(domain, bound.id, base) <= now;
  if (eligibleNow && shadow === 0) return { kind: "bound", rec: bound };
  const at = Math.max(eligibleAt(domain, bound.id, now, params.maxConcurrency, base), shadow);
  return { kind: "denied", retryAfterMs: Math.max(0, at - now) };
}

/** What pickCandidate found. */
interface Picked {
  /** The candidate to grant; undefined: none is eligible. */
  readonly rec: ProxyRecord | undefined;
  /** The size of the candidate index. */
  readonly candidates: number;
  /** The earliest moment a candidate held back by what the busy index does not show frees up (0: none seen). */
  readonly freeAt: number;
}

/**
 * Step pickCandidate: the first eligible candidate among random probes of the top band, then a
 * scan of the band (selection.ts `choose`). Eligible: the tier and labels, the pair (not blocked,
 * room under maxConcurrency, paced), reserved for no other worker, idle under the shadow
 * domain-keys, held by no other domain-key of its isolation groups, not waiting for a probe the
 * request requires, and the same of its siblings' pairs (G9).
 */
function pickCandidate(req: Request): Picked {
  const { state, pool, domain, params, now, base, isolation, ask } = req;
  const candidates = pool.candidates(params.tier, params.labels);
  // the earliest moment a candidate held back by what the busy index does not show (the
  // domain-key's current interval, an earlier domain-key of the host) frees up
  let freeAt = 0;
  const note = (until: number): void => {
    if (until > now && (freeAt === 0 || until < freeAt)) freeAt = until;
  };
  const eligible = (rec: ProxyRecord): boolean => {
    if (!matchesRequest(rec, params) || !pairEligible(domain, rec.id, now, params.maxConcurrency)) return false;
    if (proxyReservedUntil(pool, rec.id, ask, now) === 0 || req.exits?.awaitsProbe(rec.id) === true) return false;
    const until = Math.max(pacedUntil(domain, rec.id, base), heldElsewhere(req, rec.id));
    note(until);
    return until <= now;
  };
  // proxies a sibling holds back are not in the busy index: the band widens by them too (G9)
  const heldBack = (isolation?.heldN ?? 0) + (req.exits === undefined ? 0 : pool.exits.siblingMembers);
  const rec = choose({ candidates, domain, random: state.ctx.random, eligible, heldBack });
  return { rec, candidates: candidates.size, freeAt };
}

/**
 * Step deny: no candidate can be granted: denied, with when an eligible proxy is known to appear.
 * With no candidates at all, the earliest quarantine return (busy entries then belong to proxies
 * that are gone from the list); otherwise the earliest busy entry of the domain-key; or `freeAt`
 * when sooner; -1 when none is known.
 */
function deny(req: Request, candidates: number, freeAt: number): Denied {
  const { pool, domain, now } = req;
  const next = candidates === 0 ? pool.quarantine.peek() : domain.busy.peek();
  const known = next === undefined ? -1 : Math.max(0, next.time - now);
  const held = freeAt > 0 ? freeAt - now : -1;
  return { kind: "denied", retryAfterMs: known < 0 ? held : held < 0 ? known : Math.min(known, held) };
}

/**
 * Step grant: grant `rec` on the pair (rec, domain-key), for the TTL asked — or, on a pair reserved
 * for a silent worker from a later moment, until then (`pairReservedUntil`).
 */
function grant(req: Request, rec: ProxyRecord, sessionRebound: boolean): AcquireResult {
  const { state, pool, domain, params, now } = req;
  const pair = pairOf(domain, rec.id);
  pair.fence = nextToken(pair.fence, now);
  const leaseId = newLeaseId();
  const until = pairReservedUntil(pool, rec.id, req.ask, now);
  const ttlMs = until === undefined ? params.ttlMs : Math.min(params.ttlMs, until - now);
  const expireAt = now + ttlMs;
  pair.holders.set(leaseId, expireAt);
  pair.maxConcurrency = params.maxConcurrency;
  pair.banTtlMs = params.banTtlMs;
  holdOnGrant({ holds: pool.isolation, pair, proxyId: rec.id, domainKey: params.domainKey }, params, { now, expireAt });
  const baseMs = baseInterval(params.minIntervalMs, domain.adaptive.adaptiveMs, params.adaptive);
  const jitter = params.jitterMs > 0 ? Math.floor(state.ctx.random() * (params.jitterMs + 1)) : 0;
  pair.intervalMs = baseMs + jitter;
  pair.anchorAt = now;
  pair.anchor = params.pacing;
  pair.pacing = { baseMs, policyMinMs: params.minIntervalMs, maxIntervalMs: params.maxIntervalMs, adaptive: params.adaptive };
  if (pair.intervalMs > 0) pair.nextAt = Math.max(pair.nextAt, now + pair.intervalMs);
  refreshBusy(domain, rec.id, pair, now);
  pool.longestTtl.note(ttlMs, now);
  rec.lastUsedBy = params.identity !== undefined && params.identity !== "" ? params.identity : params.workerId;
  rec.lastUsedAt = now;
  state.leases.add({
    leaseId,
    pool: pool.name,
    domainKey: params.domainKey,
    proxyId: rec.id,
    token: pair.fence,
    expireAt,
    ttlMs: params.ttlMs,
    longestTtlMs: ttlMs,
    workerId: params.workerId,
    sessionKey: params.sessionKey,
    released: false,
    releasedAt: 0,
    lateOutcomeApplied: false,
  });
  if (params.sessionKey !== "") pool.sessions.bind(params.sessionKey, rec.id, now + params.sessionTtlMs);
  if (params.requestId !== "") pool.requests.record(params.workerId, params.requestId, leaseId, now);
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
      // a fraction of a ms, or a jitter that drew 0, is still pacing (kept leases: 0 = unpaced)
      intervalMs: params.jitterMs > 0 ? Math.max(1, Math.ceil(pair.intervalMs)) : Math.ceil(pair.intervalMs),
      ttlMs,
    },
  };
}

/** Until when the proxy is busy under an earlier domain-key of the host (0: idle under all; usually there is none). */
function busyUnderShadows(pool: PoolState, params: AcquireParams, proxyId: string, now: number): number {
  let until = 0;
  for (const key of params.shadowKeys) until = Math.max(until, busyUnder(pool.domains.get(key), proxyId, now));
  return until;
}

/**
 * G4: the next fencing token of a pair, max(previous + 1, now in µs): strictly increasing per
 * pair, and — being clock-derived — still increasing after the store lost the pair's state.
 */
export function nextToken(previous: number, now: number): number {
  return Math.max(previous + 1, now * 1000);
}
