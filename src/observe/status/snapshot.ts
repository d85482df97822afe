/**
 * What the status page shows, as JSON (`GET /status.json` on the metrics address): per pool the
 * proxies by state and tier, the live workers with the leases this broker granted them in the last
 * minute, per domain-key the grants, bans, cool-downs and the pacing interval, the domain policies
 * with their isolation groups, and the outcomes of the last minute. Built at most once a second
 * (the page polls it).
 */
import type { StoreEvents, StorePolicies, StoreProxies, StoreRecovery, StoreSources, StoreWorkers } from "@proxybroker/sdk/engine";
import type { PolicyDefaults, ProxyStateName } from "@proxybroker/sdk/model";
import { domainFigures } from "../domain-figures.js";
import { countProxies, type ExitCounts } from "../proxy-counts.js";
import type { DomainFigures } from "../domain-figures.js";
import { policyRows } from "./policies.js";
import type { PolicyRow } from "./policies.js";
import { sourceRows } from "./sources.js";
import type { SourceRow } from "./sources.js";
import type { BrokerCounts } from "../counts.js";

export interface PoolStatus {
  readonly pool: string;
  readonly total: number;
  readonly byState: Readonly<Record<ProxyStateName, number>>;
  /** tier ("" = none) → state → count. */
  readonly byTier: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** What the health checks showed of the proxies' exit IPs (G9). */
  readonly exits: ExitCounts;
  /** Counted over the first `counted` proxies (a very large pool is sampled). */
  readonly counted: number;
  readonly workers: readonly {
    readonly workerId: string;
    readonly lastSeenAt: number;
    readonly grantsLastMinute: number;
    readonly fallbackPool: boolean;
  }[];
  readonly grantsLastMinute: number;
  readonly domains: readonly DomainFigures[];
  /** The pool's domain policies (at most 200, by pattern). */
  readonly policies: readonly PolicyRow[];
  /** The pool's sources and their last refresh. */
  readonly sources: readonly SourceRow[];
  /** Grants are held until then after the store lost (or may have lost) the pool's state (epoch ms; 0 = not held). */
  readonly grantsHeldUntil: number;
  /** The longest lease TTL granted there lately (what a hold waits for), ms. */
  readonly longestTtlMs: number;
}

export interface StatusSnapshot {
  readonly time: number;
  readonly broker: { readonly healthLeader: boolean; readonly waiting: number };
  readonly outcomesLastMinute: Readonly<Record<string, number>>;
  readonly pools: readonly PoolStatus[];
}

export interface StatusDeps {
  readonly store: StoreProxies & StoreWorkers & StorePolicies & StoreRecovery & StoreEvents & StoreSources;
  readonly policyDefaults: PolicyDefaults;
  readonly counts: BrokerCounts;
  readonly pools: () => readonly string[];
  readonly workerActiveWindowMs: number;
  readonly healthLeader: () => boolean;
  readonly waiting: () => number;
  readonly clock: () => number;
}

async function poolStatus(deps: StatusDeps, pool: string, now: number): Promise<PoolStatus> {
  const { byState, byTier, exits, counted } = await countProxies(deps.store, pool);
  const stats = await deps.store.poolStats(pool, now - deps.workerActiveWindowMs);
  const perWorker = deps.counts.grantsByWorker.of(pool, now);
  const workers = (await deps.store.liveWorkers(pool, now - deps.workerActiveWindowMs)).map((w) => ({
    workerId: w.workerId,
    lastSeenAt: w.lastSeenAt,
    grantsLastMinute: perWorker.get(w.workerId) ?? 0,
    fallbackPool: w.fallbackPoolAt > 0,
  }));
  const grants = [...deps.counts.grantsByDomain.of(pool, now).values()].reduce((a, b) => a + b, 0);
  const hold = await deps.store.holdState(pool);
  return {
    pool,
    total: stats.total,
    byState,
    byTier,
    exits,
    counted,
    workers,
    grantsLastMinute: grants,
    domains: await domainFigures(deps, pool, now),
    policies: await policyRows(deps.store, pool),
    sources: await sourceRows(deps.store, pool),
    grantsHeldUntil: hold.heldUntil,
    longestTtlMs: hold.longestTtlMs,
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
