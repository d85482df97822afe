/**
 * Internal to the in-memory engine: read-only admin queries (proxy pages, stats, live workers).
 * They never create a pool and never change state.
 */
import type { DomainPacing, PoolStats, ProxyView, WorkerSeen } from "../../model/model.js";
import { compareIds } from "./ids.js";
import { NOT_ADAPTED, type PoolState } from "./pool-state.js";
import { viewOf } from "./records.js";

/** Up to `size` proxies with ids > `after` in byte order; `next` = last id when more remain. */
export function listProxies(pool: PoolState | undefined, page: { size: number; after: string }): { proxies: ProxyView[]; next: string } {
  if (pool === undefined) return { proxies: [], next: "" };
  const ids = pool.idsInOrder(compareIds);
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareIds(ids[mid]!, page.after) <= 0) lo = mid + 1;
    else hi = mid;
  }
  const end = Math.min(ids.length, lo + Math.max(1, Math.floor(page.size)));
  const proxies = ids.slice(lo, end).map((id) => viewOf(pool.proxies.get(id)!));
  return { proxies, next: end < ids.length ? ids[end - 1]! : "" };
}

/** Counts by state, and workers that acquired at or after `liveSinceMs`. */
export function poolStats(pool: PoolState | undefined, liveSinceMs: number): PoolStats {
  const stats = { total: 0, active: 0, quarantined: 0, blacklisted: 0, disabled: 0, liveWorkers: 0 };
  if (pool === undefined) return stats;
  for (const rec of pool.proxies.values()) {
    stats.total += 1;
    if (rec.state === "ACTIVE") stats.active += 1;
    else if (rec.state === "QUARANTINED") stats.quarantined += 1;
    else if (rec.state === "BLACKLISTED") stats.blacklisted += 1;
    else stats.disabled += 1;
  }
  stats.liveWorkers = liveWorkers(pool, liveSinceMs).length;
  return stats;
}

/** Workers that acquired at or after `sinceMs`, by worker id. */
export function liveWorkers(pool: PoolState | undefined, sinceMs: number, withClaims = false): WorkerSeen[] {
  if (pool === undefined) return [];
  const seen: WorkerSeen[] = [];
  for (const [workerId, lastSeenAt] of pool.workers) {
    if (lastSeenAt < sinceMs) continue;
    const yieldsAt = pool.yielding.get(workerId) ?? 0;
    const listsAt = pool.lists.get(workerId) ?? 0;
    const heardAt = pool.heard.get(workerId) ?? 0;
    seen.push({
      workerId,
      lastSeenAt,
      fallbackPoolAt: pool.fallbackPools.get(workerId) ?? 0,
      ...(yieldsAt > 0 ? { yieldsLeasesAt: yieldsAt } : {}),
      ...(listsAt > 0 ? { listsAt } : {}),
      ...(heardAt > 0 ? { heardAt } : {}),
      ...(withClaims ? { claims: pool.claims.of(workerId) } : {}),
    });
  }
  return seen.sort((a, b) => compareIds(a.workerId, b.workerId));
}

/**
 * The pacing state of the given domain-keys (all that are adapted when `domainKeys` is empty, up
 * to `limit`, highest interval first).
 */
export function domainPacing(pool: PoolState | undefined, domainKeys: readonly string[], limit: number): DomainPacing[] {
  if (pool === undefined) return [];
  const out: DomainPacing[] = [];
  if (domainKeys.length > 0) {
    for (const key of domainKeys.slice(0, limit)) out.push({ domainKey: key, ...(pool.domains.get(key)?.adaptive ?? NOT_ADAPTED) });
    return out;
  }
  for (const [domainKey, d] of pool.domains) if (d.adaptive.adaptiveMs > 0) out.push({ domainKey, ...d.adaptive });
  out.sort((a, b) => b.adaptiveMs - a.adaptiveMs || compareIds(a.domainKey, b.domainKey));
  return out.slice(0, limit);
}
