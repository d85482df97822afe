/**
 * Internal to the in-memory engine: the (proxy, domain-key) pair rules — live holders,
 * `blockedUntil` and the busy index entry that mirrors it, and eligibility.
 *
 * Pacing (G2): a grant sets `nextAt` to grant + interval. With the "release" anchor, a holder that
 * ends (released, found expired, lost) also pushes `nextAt` to its end + interval, and a pair at
 * its cap stays blocked until the earliest holder's expiry + interval.
 */
import type { DomainState } from "./pool-state.js";
import { newPair, type PairState } from "./records.js";

/** The pair of `proxyId` in `domain`, created on demand. */
export function pairOf(domain: DomainState, proxyId: string): PairState {
  let pair = domain.pairs.get(proxyId);
  if (pair === undefined) {
    pair = newPair();
    domain.pairs.set(proxyId, pair);
    domain.pairSweep.push(proxyId);
  }
  return pair;
}

/** The wait after a holder's end before the next grant: the interval with the "release" anchor. */
function endGap(pair: PairState): number {
  return pair.anchor === "release" ? pair.intervalMs : 0;
}

/** A lease of the pair ended at `endedAt`: with the "release" anchor, no grant before end + interval. */
export function anchorEnd(pair: PairState, endedAt: number): void {
  if (pair.anchor !== "release") return;
  pair.nextAt = Math.max(pair.nextAt, endedAt + pair.intervalMs);
  pair.anchorAt = Math.max(pair.anchorAt, endedAt);
}

/** A holder ended at `endedAt`: drop it and apply the anchor. Answers whether it was one. */
export function endHolder(pair: PairState, leaseId: string, endedAt: number): boolean {
  if (!pair.holders.delete(leaseId)) return false;
  anchorEnd(pair, endedAt);
  return true;
}

/** Number of live holders after ending the expired ones (each at its expiry). */
export function liveHolders(pair: PairState, now: number): number {
  for (const [leaseId, expireAt] of pair.holders) {
    if (expireAt <= now) endHolder(pair, leaseId, expireAt);
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

/** When the pair can be granted again as far as known now, under `maxConcurrency`. */
function pairUntil(pair: PairState, now: number, maxConcurrency: number): number {
  const cap = capUntil(pair, now, maxConcurrency);
  return Math.max(pair.nextAt, pair.banUntil, pair.coolUntil, cap > 0 ? cap + endGap(pair) : 0);
}

/** max(nextAt, banUntil, coolUntil, capUntil + end gap) with the pair's own maxConcurrency. */
export function blockedUntil(pair: PairState, now: number): number {
  return pairUntil(pair, now, pair.maxConcurrency);
}

/** Recompute the pair's blockedUntil: set its busy entry when > now, else remove it. */
export function refreshBusy(domain: DomainState, proxyId: string, pair: PairState, now: number): void {
  const until = blockedUntil(pair, now);
  if (until > now) domain.busy.set(proxyId, until);
  else domain.busy.delete(proxyId);
}

/**
 * When the interval the domain-key runs under now (`baseMs`) lets the pair of `proxyId` be granted
 * again (0: at once). The busy index does not show it: a raised interval holds for every pair at
 * once, without rewriting their entries.
 */
export function pacedUntil(domain: DomainState, proxyId: string, baseMs: number): number {
  const pair = domain.pairs.get(proxyId);
  return pair !== undefined && pair.anchorAt > 0 ? pair.anchorAt + baseMs : 0;
}

/**
 * Whether the pair may be granted now under `maxConcurrency`: no busy entry (or one ≤ now), not
 * paced by its last grant's interval, and fewer live holders than `maxConcurrency`. The current
 * interval of the domain-key is `pacedUntil`'s.
 */
export function pairEligible(domain: DomainState, proxyId: string, now: number, maxConcurrency: number): boolean {
  const busy = domain.busy.get(proxyId);
  if (busy !== undefined && busy > now) return false;
  const pair = domain.pairs.get(proxyId);
  if (pair === undefined) return true;
  const count = liveHolders(pair, now);
  if (Math.max(pair.nextAt, pair.banUntil, pair.coolUntil) > now) {
    refreshBusy(domain, proxyId, pair, now);
    return false;
  }
  return count < maxConcurrency;
}

/**
 * Until when a proxy is busy under an earlier domain-key of the host (`AcquireParams.shadowKeys`):
 * a live holder there or anything blocking it (pacing, ban, cool-down); 0 when idle there.
 */
export function busyUnder(domain: DomainState | undefined, proxyId: string, now: number): number {
  if (domain === undefined) return 0;
  const busy = domain.busy.get(proxyId);
  if (busy !== undefined && busy > now) return busy;
  const pair = domain.pairs.get(proxyId);
  const until = pair === undefined ? 0 : pairUntil(pair, now, 1);
  return until > now ? until : 0;
}

/** The earliest expiry of a live lease of `domain` on `proxyId` (0: none at `now`): its pacing and bans aside. */
export function liveUnder(domain: DomainState | undefined, proxyId: string, now: number): number {
  const holders = domain?.pairs.get(proxyId)?.holders;
  if (holders === undefined) return 0;
  let first = 0;
  for (const expireAt of holders.values()) if (expireAt > now && (first === 0 || expireAt < first)) first = expireAt;
  return first;
}

/** When an ineligible pair becomes eligible under `maxConcurrency` and `baseMs`, as far as known now. */
export function eligibleAt(domain: DomainState, proxyId: string, now: number, maxConcurrency: number, baseMs: number): number {
  const busy = domain.busy.get(proxyId) ?? 0;
  const pair = domain.pairs.get(proxyId);
  return Math.max(busy, pair === undefined ? 0 : pairUntil(pair, now, maxConcurrency), pacedUntil(domain, proxyId, baseMs));
}
