/**
 * Internal to the in-memory engine: pruning of what a pool no longer needs, a few entries per
 * acquire (rotating sweeps), so that a stream of new domain-keys leaves nothing behind for long.
 * - A pair with no live holder is dropped a day after the last moment it remembers (its anchor,
 *   pacing, ban and cool-down); fencing tokens come from the clock, so a pair made again later
 *   still hands out higher ones. What is lost is the count of consecutive rate limits.
 * - A domain-key with no pair, no busy entry and no adapted interval is dropped.
 */
import type { PoolState } from "./pool-state.js";
import { liveHolders } from "./pair.js";
import type { DomainState } from "./pool-state.js";
import type { PairState } from "./records.js";

const DAY_MS = 86_400_000;

/** Whether `pair` remembers nothing that matters at `now`. */
export function pairStale(pair: PairState, now: number): boolean {
  if (liveHolders(pair, now) > 0) return false;
  return Math.max(pair.anchorAt, pair.nextAt, pair.banUntil, pair.coolUntil) + DAY_MS <= now;
}

/** Look at up to `count` pairs of `domain`; drop the stale ones. */
export function sweepPairs(domain: DomainState, now: number, count: number): void {
  domain.pairSweep.sweep(count, (proxyId) => {
    const pair = domain.pairs.get(proxyId);
    if (pair === undefined) return false;
    if (!pairStale(pair, now)) return true;
    domain.pairs.delete(proxyId);
    domain.busy.delete(proxyId);
    return false;
  });
}

/** Look at up to `count` domain-keys of `pool` (and a few pairs of each); drop the empty ones. */
export function sweepDomains(pool: PoolState, now: number, count: number): void {
  pool.domainSweep.sweep(count, (domainKey) => {
    const domain = pool.domains.get(domainKey);
    if (domain === undefined) return false;
    sweepPairs(domain, now, 2);
    while (domain.busy.popUpTo(now) !== undefined);
    if (domain.pairs.size > 0 || domain.busy.size > 0 || domain.adaptive.adaptiveMs > 0 || domain.adaptive.learnedMs > 0) return true;
    pool.domains.delete(domainKey);
    return false;
  });
}
