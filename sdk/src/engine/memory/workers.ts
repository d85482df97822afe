/**
 * Internal to the in-memory engine: a pool's records of its workers — seen, heard with their
 * fallback claims, put back after a loss, forgotten — as the Redis store keeps them.
 */
import type { WorkerHeard, WorkerSeen, WorkerTouch } from "../../model/model.js";
import type { PoolState } from "./pool-state.js";

export function touchWorker(p: PoolState, workerId: string, touch: WorkerTouch, now: number): void {
  p.workers.see(workerId, now);
  p.fallbackPools.see(workerId, now);
  if ((touch.listsAt ?? 0) > 0) p.lists.remember(workerId, touch.listsAt ?? 0);
}

export function rememberWorkers(p: PoolState, workers: readonly WorkerSeen[]): void {
  for (const w of workers) {
    p.workers.remember(w.workerId, w.lastSeenAt);
    if (w.fallbackPoolAt > 0) p.fallbackPools.remember(w.workerId, w.fallbackPoolAt);
    if ((w.yieldsLeasesAt ?? 0) > 0) p.yielding.remember(w.workerId, w.yieldsLeasesAt ?? 0);
    if ((w.listsAt ?? 0) > 0) p.lists.remember(w.workerId, w.listsAt ?? 0);
    if ((w.heardAt ?? 0) > 0) p.heard.remember(w.workerId, w.heardAt ?? 0);
    if (w.claims !== undefined) p.claims.remember(w.workerId, w.claims);
  }
}

export function hearWorker(p: PoolState, workerId: string, heard: WorkerHeard, now: number): void {
  p.workers.see(workerId, now);
  p.fallbackPools.see(workerId, now);
  if (heard.heardAt > 0) p.heard.raise(workerId, heard.heardAt);
  if (heard.claim !== undefined) p.claims.record(workerId, heard.claim, heard.fresh === true);
}

/** False when the pool, or the worker in it, was not known. */
export function forgetWorker(p: PoolState | undefined, workerId: string): boolean {
  p?.heard.forget(workerId);
  p?.claims.forget(workerId);
  return p?.workers.forget(workerId) ?? false;
}
