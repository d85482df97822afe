/**
 * Internal to the in-memory engine: the (proxy, domain-key) pair rules — live holders,
 * `blockedUntil` and the busy index entry that mirrors it, and eligibility.
 */
import type { DomainState } from "./pool-state.js";
import { newPair, type PairState } from "./records.js";

/** The pair of `proxyId` in `domain`, created on demand. */
export function pairOf(domain: DomainState, proxyId: string): PairState {
  let pair = domain.pairs.get(proxyId);
  if (pair === undefined) {
    pair = newPair();
    domain.pairs.set(proxyId, pair);
  }
  return pair;
}

/** Number of live holders after dropping the expired ones. */
export function liveHolders(pair: PairState, now: number): number {
  for (const [leaseId, expireAt] of pair.holders) {
    if (expireAt <= now) pair.holders.delete(leaseId);
  }
  return pair.holders.size;
}

/** The earliest live holder expiry when live holders ≥ `maxConcurrency`, else 0. */
export function capUntil(pair: PairState, now: number, maxConcurrency: number): number {
  if (liveHolders(pair, now) < maxConcurrency) return 0;
  let earliest = Infinity;
  for (const expireAt of pair.holders.values()) earliest = Math.min(earliest, expireAt);
  return earliest === Infinity ? 0 : earliest;
}

/** max(nextAt, banUntil, coolUntil, capUntil) with the pair's own maxConcurrency. */
export function blockedUntil(pair: PairState, now: number): number {
  return Math.max(pair.nextAt, pair.banUntil, pair.coolUntil, capUntil(pair, now, pair.maxConcurrency));
}

/** Recompute the pair's blockedUntil: set its busy entry when > now, else remove it. */
export function refreshBusy(domain: DomainState, proxyId: string, pair: PairState, now: number): void {
  const until = blockedUntil(pair, now);
  if (until > now) domain.busy.set(proxyId, until);
  else domain.busy.delete(proxyId);
}

/**
 * Whether the pair may be granted now under `maxConcurrency`: no busy entry (or one ≤ now) and
 * fewer live holders than `maxConcurrency`.
 */
export function pairEligible(domain: DomainState, proxyId: string, now: number, maxConcurrency: number): boolean {
  const busy = domain.busy.get(proxyId);
  if (busy !== undefined && busy > now) return false;
  const pair = domain.pairs.get(proxyId);
  return pair === undefined || liveHolders(pair, now) < maxConcurrency;
}

/** When an ineligible pair becomes eligible under `maxConcurrency`, as far as known now. */
export function eligibleAt(domain: DomainState, proxyId: string, now: number, maxConcurrency: number): number {
  const busy = domain.busy.get(proxyId) ?? 0;
  const pair = domain.pairs.get(proxyId);
  return Math.max(busy, pair === undefined ? 0 : capUntil(pair, now, maxConcurrency));
}
