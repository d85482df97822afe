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

/** The isolation group of an acquire ("" = none). */
function groupOf(params: AcquireParams): string {
  return params.isolation?.group ?? "";
}

/** Reserved for a worker other than the caller. */
function other(owner: string | undefined, workerId: string): boolean {
  return owner !== undefined && owner !== workerId;
}

/** Every proxy of the acquire's domain-key, or of its isolation group, is reserved for another worker. */
export function domainReservedForOther(pool: PoolState, params: AcquireParams): boolean {
  if (pool.reservedDomains.size === 0) return false;
  if (other(pool.reservedDomains.get(params.domainKey), params.workerId)) return true;
  const group = groupOf(params);
  return group !== "" && other(pool.reservedDomains.get(groupEntry(group)), params.workerId);
}

/**
 * The proxy is reserved for another worker (one that may be using it from its fallback pool) for
 * this domain-key: one of that worker's scope (itself or its isolation group), or any when it has none.
 */
export function reservedForOther(pool: PoolState, proxyId: string, params: AcquireParams): boolean {
  if (pool.reserved.size === 0) return false;
  const owner = pool.reserved.get(proxyId);
  if (owner === undefined || owner === params.workerId) return false;
  const scope = pool.reservedScopes.get(owner);
  if (scope === undefined) return true;
  const group = groupOf(params);
  return scope.has(params.domainKey) || (group !== "" && scope.has(groupEntry(group)));
}

/** A renewal of a lease of `domainKey` (isolation group `group`, "" = none) on `proxyId` by `workerId`. */
export interface RenewalAt {
  readonly proxyId: string;
  readonly domainKey: string;
  readonly group: string;
  readonly workerId: string;
}

/**
 * The lease's proxy, or every proxy of its domain-key or isolation group, is reserved for a worker
 * other than the renewing one: the lease is not extended (it runs out at its expiry).
 */
export function renewalReservedForOther(pool: PoolState, at: RenewalAt): boolean {
  const entry = at.group === "" ? undefined : groupEntry(at.group);
  const proxyOwner = pool.reserved.get(at.proxyId);
  if (proxyOwner !== undefined) {
    const scope = pool.reservedScopes.get(proxyOwner);
    const inScope = scope === undefined || scope.has(at.domainKey) || (entry !== undefined && scope.has(entry));
    if (inScope && proxyOwner !== at.workerId) return true;
    if (inScope) return false;
  }
  if (other(pool.reservedDomains.get(at.domainKey), at.workerId)) return true;
  return entry !== undefined && other(pool.reservedDomains.get(entry), at.workerId);
}
