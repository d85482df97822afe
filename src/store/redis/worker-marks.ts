/**
 * When this store last recorded each worker as seen in a pool. Every acquire records its worker
 * (`P ws`, and `P wf` when it keeps a fallback pool): a ZADD that was ~3 % of a lease cycle's
 * Redis work. With a refresh time, an acquire records its worker only when this store has not
 * done so within it, so the last-seen time a pool shows lags by less than the refresh time (the
 * broker keeps it well below WORKER_ABSENT_AFTER_MS).
 */

/** Marks kept at most; beyond, all are dropped (the next acquire of each records again). */
const MAX_MARKS = 100_000;
/**
 * A worker's use of a domain-key is recorded at most this often per store: a listing counts in
 * minutes (the fallback window), so seconds of lag cost nothing, and a busy crawl loop saves one
 * write per lease.
 */
export const DOMAIN_USE_REFRESH_MS = 5_000;

/** Whose acquire: the parts of `AcquireParams` a mark is kept by. */
export interface MarkedWorker {
  readonly pool: string;
  readonly workerId: string;
  readonly fallbackPool?: boolean;
}

function keyOf(w: MarkedWorker): string {
  return `${w.pool}\x1f${w.workerId}\x1f${w.fallbackPool === true ? 1 : 0}`;
}

export class WorkerMarks {
  private readonly at = new Map<string, number>();
  private readonly uses = new Map<string, number>();

  /** `refreshMs` 0: every acquire records. `clock`: the store's, epoch ms. */
  constructor(
    private readonly refreshMs: number,
    private readonly clock: () => number,
  ) {}

  /** Whether an acquire of (pool, worker) should record the worker now; if so, noted as done. */
  due(w: MarkedWorker): boolean {
    if (this.refreshMs <= 0) return true;
    const key = keyOf(w);
    const now = this.clock();
    const last = this.at.get(key);
    if (last !== undefined && now >= last && now - last < this.refreshMs) return false;
    if (this.at.size >= MAX_MARKS) this.at.clear();
    this.at.set(key, now);
    return true;
  }

  /** The acquire that was to record it did not (it failed, or was answered stale): the next one records. */
  undo(w: MarkedWorker): void {
    this.at.delete(keyOf(w));
  }

  /** Whether an acquire should record the worker's use of `domainKey` now; if so, noted as done. */
  dueUse(w: MarkedWorker & { readonly domainKey: string }): boolean {
    const key = `${w.pool}\x1f${w.workerId}\x1f${w.domainKey}`;
    const now = this.clock();
    const last = this.uses.get(key);
    if (last !== undefined && now >= last && now - last < DOMAIN_USE_REFRESH_MS) return false;
    if (this.uses.size >= MAX_MARKS) this.uses.clear();
    this.uses.set(key, now);
    return true;
  }

  /** The acquire that was to record the use did not: the next one records it. */
  undoUse(w: MarkedWorker & { readonly domainKey: string }): void {
    this.uses.delete(`${w.pool}\x1f${w.workerId}\x1f${w.domainKey}`);
  }

  /** The worker left (forgetWorker): its next acquire records it again. */
  forget(pool: string, workerId: string): void {
    this.at.delete(keyOf({ pool, workerId, fallbackPool: false }));
    this.at.delete(keyOf({ pool, workerId, fallbackPool: true }));
  }
}
