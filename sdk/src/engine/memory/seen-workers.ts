/**
 * Internal to the in-memory engine: the workers a pool has seen (worker id → last seen), bounded
 * as the Redis store bounds its `P ws`: ids not seen for a week are forgotten, and beyond `max`
 * ids the least recently seen go first. Kept in least-recently-seen order, so both are O(1).
 */
const WEEK_MS = 7 * 86_400_000;

export class SeenWorkers {
  private readonly seen = new Map<string, number>();

  constructor(private readonly max: number) {}

  get size(): number {
    return this.seen.size;
  }

  /** When `workerId` was last seen (undefined: not kept). */
  get(workerId: string): number | undefined {
    return this.seen.get(workerId);
  }

  /** Record `workerId` as seen at `now`; a new id trims the stale and the oldest beyond the cap. */
  see(workerId: string, now: number): void {
    const known = this.seen.delete(workerId);
    this.seen.set(workerId, now);
    if (known) return;
    for (const [id, at] of this.seen) {
      if (at >= now - WEEK_MS && this.seen.size <= this.max) break;
      this.seen.delete(id);
    }
  }

  /** Record `workerId` as seen at `at` unless it was seen later; the order (least recent first) is kept. */
  remember(workerId: string, at: number): void {
    const was = this.seen.get(workerId);
    if (was !== undefined && was >= at) return;
    this.seen.set(workerId, at);
    const ordered = [...this.seen].sort((a, b) => a[1] - b[1]);
    this.seen.clear();
    for (const [id, t] of ordered.slice(Math.max(0, ordered.length - this.max))) this.seen.set(id, t);
  }

  /**
   * Record `workerId` at `at` unless it is kept with a later time (times that mostly grow: it
   * moves to the most recent end, as `see` does).
   */
  raise(workerId: string, at: number): void {
    const was = this.seen.get(workerId);
    if (was !== undefined && was >= at) return;
    this.see(workerId, at);
  }

  /** Forget `workerId`; false when it was not kept. */
  forget(workerId: string): boolean {
    return this.seen.delete(workerId);
  }

  /** Every kept worker with its last-seen time, least recently seen first. */
  [Symbol.iterator](): IterableIterator<[string, number]> {
    return this.seen.entries();
  }
}
