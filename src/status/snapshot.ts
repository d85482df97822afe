/**
 * What the status page shows, as JSON (`GET /status.json` on the metrics address): per pool the
 * proxies by state and tier, the live workers with the leases this broker granted them in the last
 * minute, per domain-key the grants, bans, cool-downs and the pacing interval, and the outcomes
 * of the last minute. Built at most once a second (the page polls it).
 */
import type { LeaseStore } from "@proxybroker/sdk/engine";
import type { PolicyDefaults, ProxyStateName } from "@proxybroker/sdk/model";
import { domainFigures } from "../service/admin-stats.js";
import type { DomainFigures } from "../service/admin-stats.js";
import type { MinuteCounts } from "../service/minute-counts.js";

export interface PoolStatus {
  readonly pool: string;
  readonly total: number;
  readonly byState: Readonly<Record<ProxyStateName, number>>;
  /** tier ("" = none) → state → count. */
  readonly byTier: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Counted over the first `counted` proxies (a very large pool is sampled). */
  readonly counted: number;
  readonly workers: readonly { readonly workerId: string; readonly lastSeenAt: number; readonly grantsLastMinute: number; readonly fallbackPool: boolean }[];
  readonly grantsLastMinute: number;
  readonly domains: readonly DomainFigures[];
}

export interface StatusSnapshot {
  readonly time: number;
  readonly broker: { readonly healthLeader: boolean; readonly waiting: number };
  readonly outcomesLastMinute: Readonly<Record<string, number>>;
  readonly pools: readonly PoolStatus[];
}

export interface StatusDeps {
  readonly store: LeaseStore;
  readonly policyDefaults: PolicyDefaults;
  readonly counts: { readonly grantsByDomain: MinuteCounts; readonly grantsByWorker: MinuteCounts; readonly outcomes: MinuteCounts };
  readonly pools: () => readonly string[];
  readonly workerActiveWindowMs: number;
  readonly healthLeader: () => boolean;
  readonly waiting: () => number;
  readonly clock: () => number;
}

/** Proxies counted per pool at most. */
const MAX_COUNTED = 50_000;
const STATES: readonly ProxyStateName[] = ["ACTIVE", "QUARANTINED", "BLACKLISTED", "DISABLED"];

async function poolStatus(deps: StatusDeps, pool: string, now: number): Promise<PoolStatus> {
  const byState: Record<string, number> = Object.fromEntries(STATES.map((s) => [s, 0]));
  const byTier: Record<string, Record<string, number>> = {};
  let counted = 0;
  for (let after = ""; counted < MAX_COUNTED; ) {
    const page = await deps.store.listProxies(pool, { size: 1_000, after });
    for (const p of page.proxies) {
      byState[p.state] = (byState[p.state] ?? 0) + 1;
      const t = (byTier[p.tier] ??= {});
      t[p.state] = (t[p.state] ?? 0) + 1;
      counted++;
    }
    if (page.next === "") break;
    after = page.next;
  }
  const stats = await deps.store.poolStats(pool, now - deps.workerActiveWindowMs);
  const perWorker = deps.counts.grantsByWorker.of(pool, now);
  const workers = (await deps.store.liveWorkers(pool, now - deps.workerActiveWindowMs)).map((w) => ({
    workerId: w.workerId,
    lastSeenAt: w.lastSeenAt,
    grantsLastMinute: perWorker.get(w.workerId) ?? 0,
    fallbackPool: w.fallbackPoolAt > 0,
  }));
  const grants = [...deps.counts.grantsByDomain.of(pool, now).values()].reduce((a, b) => a + b, 0);
  return {
    pool,
    total: stats.total,
    byState: byState as Record<ProxyStateName, number>,
    byTier,
    counted,
    workers,
    grantsLastMinute: grants,
    domains: await domainFigures(deps, pool, now),
  };
}

/** The snapshot now (cached for a second). */
export function statusSource(deps: StatusDeps): () => Promise<StatusSnapshot> {
  let last: { at: number; value: Promise<StatusSnapshot> } | undefined;
  return () => {
    const now = deps.clock();
    if (last !== undefined && now - last.at < 1_000) return last.value;
    const value = (async () => ({
      time: now,
      broker: { healthLeader: deps.healthLeader(), waiting: deps.waiting() },
      outcomesLastMinute: Object.fromEntries(deps.counts.outcomes.of("", now)),
      pools: await Promise.all(deps.pools().map((pool) => poolStatus(deps, pool, now))),
    }))();
    last = { at: now, value };
    value.catch(() => (last = undefined));
    return value;
  };
}
