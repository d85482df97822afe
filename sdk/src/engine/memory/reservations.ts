/**
 * Internal to the in-memory engine: what reservations (`reserve`, §7) keep from an acquire. A
 * scope entry or a `domains` key `#<group>` stands for every domain-key of isolation group
 * <group> (G8; '#' never occurs in a domain-key).
 */
import type { AcquireParams } from "../../model/model.js";
import type { PoolState } from "./pool-state.js";

/** The reservation entry that stands for every domain-key of isolation group `group`. */
export function groupEntry(group: string): string {
  return `#${group}`;
}

/** Who asks for a proxy, and for what: a domain-key, its isolation group ("" = none). */
export interface ReservedAsk {
  readonly domainKey: string;
  readonly group: string;
  readonly workerId: string;
}

/** What an acquire asks for. */
export function askOf(params: AcquireParams): ReservedAsk {
  return { domainKey: params.domainKey, group: params.isolation?.group ?? "", workerId: params.workerId };
}

/** Reserved for a worker other than the caller. */
function other(owner: string | undefined, workerId: string): boolean {
  return owner !== undefined && owner !== workerId;
}

/** Every proxy of the domain-key, or of its isolation group, is reserved for another worker. */
export function domainReservedForOther(pool: PoolState, ask: ReservedAsk): boolean {
  if (pool.reservedDomains.size === 0) return false;
  if (other(pool.reservedDomains.get(ask.domainKey), ask.workerId)) return true;
  return ask.group !== "" && other(pool.reservedDomains.get(groupEntry(ask.group)), ask.workerId);
}

/**
 * The worker `proxyId` is reserved for (one that may be using it from its fallback pool) when that
 * reservation covers the domain-key: one of that worker's scope (itself or its isolation group), or
 * any when it has none; undefined otherwise.
 */
function ownerFor(pool: PoolState, proxyId: string, ask: ReservedAsk): string | undefined {
  const owner = pool.reserved.get(proxyId);
  if (owner === undefined) return undefined;
  const scope = pool.reservedScopes.get(owner);
  if (scope === undefined || scope.has(ask.domainKey) || (ask.group !== "" && scope.has(groupEntry(ask.group)))) return owner;
  return undefined;
}

/** The proxy is reserved for another worker for this domain-key (see `ownerFor`). */
export function reservedForOther(pool: PoolState, proxyId: string, ask: ReservedAsk): boolean {
  if (pool.reserved.size === 0) return false;
  return other(ownerFor(pool, proxyId, ask), ask.workerId);
}

/**
 * A renewal on `proxyId`: the proxy is reserved for another worker for the lease's domain-key, or,
 * when it is reserved for nobody for it, every proxy of the domain-key or its group is. The lease is
 * then not extended (it runs out at its expiry).
 */
export function renewalReservedForOther(pool: PoolState, proxyId: string, ask: ReservedAsk): boolean {
  const owner = ownerFor(pool, proxyId, ask);
  if (owner !== undefined) return owner !== ask.workerId;
  return domainReservedForOther(pool, ask);
}
