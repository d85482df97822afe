/**
 * Internal to the in-memory engine: what reservations (`reserve`, §7) keep from an acquire or a
 * renewal. A scope entry or a `domains` key `#<group>` stands for every domain-key of isolation
 * group <group> (G8; '#' never occurs in a domain-key). A worker's reservations hold for everybody
 * from `from` on (`PoolState.reservedFrom`; absent: at once); before that, a caller that keeps to
 * a lease's TTL may be granted or renewed a reserved pair until then (src/store/redis/lua/includes/
 * reservations.lua reads the same rules under the same names).
 */
import type { AcquireParams } from "../../model/model.js";
import type { PoolState } from "./pool-state.js";

/** The shortest lease a reserved pair is granted (or renewed) for before its reservation holds: a fast page or two. */
export const GAP_MIN_MS = 500;

/** The reservation entry that stands for every domain-key of isolation group `group`. */
export function groupEntry(group: string): string {
  return `#${group}`;
}

/** Who asks for a proxy, and for what: a domain-key, its isolation group ("" = none). */
export interface ReservedAsk {
  readonly domainKey: string;
  readonly group: string;
  readonly workerId: string;
  /** It keeps to the TTL its grant carries (AcquireParams.honorsTtl). */
  readonly honorsTtl: boolean;
}

/** What an acquire asks for. */
export function askOf(params: AcquireParams): ReservedAsk {
  return {
    domainKey: params.domainKey,
    group: params.isolation?.group ?? "",
    workerId: params.workerId,
    honorsTtl: params.honorsTtl === true,
  };
}

/**
 * What a reservation for `owner` leaves the asker at `now`: undefined = nothing kept from it
 * (none, or its own); 0 = kept; a moment after `now` = granted (or renewed) only until then.
 */
function reservedUntil(pool: PoolState, owner: string | undefined, ask: ReservedAsk, now: number): number | undefined {
  if (owner === undefined || owner === ask.workerId) return undefined;
  if (!ask.honorsTtl) return 0;
  const from = pool.reservedFrom.get(owner) ?? 0;
  return from - now < GAP_MIN_MS ? 0 : from;
}

/**
 * The earlier of two limits of `reservedUntil`: kept (0) when either keeps it, free (undefined)
 * when both leave it free, else the earlier moment.
 */
function earliest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === 0 || b === 0) return 0;
  if (a === undefined) return b;
  return b === undefined ? a : Math.min(a, b);
}

/**
 * The worker `proxyId` is reserved for (one that may be using it from its fallback pool) when that
 * reservation covers the domain-key: one of that worker's scope (itself or its isolation group), or
 * any when it has none; undefined otherwise.
 */
function proxyOwner(pool: PoolState, proxyId: string, ask: ReservedAsk): string | undefined {
  if (pool.reserved.size === 0) return undefined;
  const owner = pool.reserved.get(proxyId);
  if (owner === undefined) return undefined;
  const scope = pool.reservedScopes.get(owner);
  if (scope === undefined || scope.has(ask.domainKey) || (ask.group !== "" && scope.has(groupEntry(ask.group)))) return owner;
  return undefined;
}

/**
 * Every proxy of the domain-key, or of its isolation group, is reserved for another worker: 0
 * kept, a moment granted until, undefined free (the earlier of the two).
 */
export function domainReservedUntil(pool: PoolState, ask: ReservedAsk, now: number): number | undefined {
  if (pool.reservedDomains.size === 0) return undefined;
  const own = reservedUntil(pool, pool.reservedDomains.get(ask.domainKey), ask, now);
  if (ask.group === "") return own;
  return earliest(own, reservedUntil(pool, pool.reservedDomains.get(groupEntry(ask.group)), ask, now));
}

/** The proxy is reserved for another worker for this domain-key: 0 kept, a moment granted until, undefined free. */
export function proxyReservedUntil(pool: PoolState, proxyId: string, ask: ReservedAsk, now: number): number | undefined {
  return reservedUntil(pool, proxyOwner(pool, proxyId, ask), ask, now);
}

/**
 * Until when the pair (proxyId, the ask's domain-key) may be granted or renewed to the asker at
 * `now`: undefined = no reservation limits it; 0 = kept from it; else that moment (the earlier of
 * the proxy's reservation and the domain-key's).
 */
export function pairReservedUntil(pool: PoolState, proxyId: string, ask: ReservedAsk, now: number): number | undefined {
  const a = proxyReservedUntil(pool, proxyId, ask, now);
  return a === 0 ? 0 : earliest(a, domainReservedUntil(pool, ask, now));
}
