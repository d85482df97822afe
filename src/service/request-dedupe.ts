/**
 * Makes a retried unary acquire idempotent on this broker: the same (worker_id, request_id)
 * within `ttlMs` gets the answer of the first call (a retry racing the first call shares its
 * promise). Bounded: the oldest entries go first.
 */
export class RequestDedupe<T> {
  private readonly entries = new Map<string, { at: number; value: Promise<T> }>();

  constructor(private readonly opts: { clock: () => number; ttlMs: number; maxEntries: number }) {}

  /** Run `fn` once per key within the TTL; an empty request id always runs. */
  run(workerId: string, requestId: string, fn: () => Promise<T>): Promise<T> {
    if (requestId === "") return fn();
    const key = `${workerId}\u0000${requestId}`;
    const now = this.opts.clock();
    const hit = this.entries.get(key);
    if (hit !== undefined && now - hit.at < this.opts.ttlMs) return hit.value;
    const value = fn();
    // A failed call (store unavailable, invalid input) may be retried for real.
    value.catch(() => this.entries.delete(key));
    this.entries.delete(key);
    this.entries.set(key, { at: now, value });
    this.prune(now);
    return value;
  }

  private prune(now: number): void {
    for (const [k, e] of this.entries) {
      if (this.entries.size <= this.opts.maxEntries && now - e.at < this.opts.ttlMs) break;
      this.entries.delete(k);
    }
  }
}
