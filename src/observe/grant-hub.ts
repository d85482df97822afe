/**
 * The leases this broker grants, for whoever watches them (WatchEvents with `grants`). Only a
 * broker's own grants: other replicas' are theirs (a fleet's grants would flood every watcher).
 */
import type { LeaseView } from "@proxybroker/sdk/model";
import type { MinuteCounts } from "./minute-counts.js";

export type GrantListener = (lease: LeaseView, caller: string, workerId: string) => void;

export class GrantHub {
  private readonly listeners = new Set<GrantListener>();

  /** Watchers now. */
  get size(): number {
    return this.listeners.size;
  }

  on(listener: GrantListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(lease: LeaseView, caller: string, workerId: string): void {
    for (const l of this.listeners) l(lease, caller, workerId);
  }
}

/** Everything a grant by this broker feeds: the metrics, the per-domain counts, the watchers. */
export function recordGrant(
  ctx: {
    readonly metrics: { granted(pool: string, caller: string): void };
    readonly counts: { readonly grantsByDomain: MinuteCounts; readonly grantsByWorker: MinuteCounts };
    readonly grants: GrantHub;
    readonly clock: () => number;
  },
  lease: LeaseView,
  caller: string,
  workerId: string,
): void {
  ctx.metrics.granted(lease.pool, caller);
  const now = ctx.clock();
  ctx.counts.grantsByDomain.add(lease.pool, lease.domainKey, now);
  ctx.counts.grantsByWorker.add(lease.pool, workerId, now);
  if (ctx.grants.size > 0) ctx.grants.emit(lease, caller, workerId);
}
