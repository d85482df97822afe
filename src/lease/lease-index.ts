/** A lease granted by this broker: whom its release wakes, and its last known expiry. */
export interface IndexedLease {
  /** The wait queue of its (pool, domain-key). */
  readonly queueKey: string;
  /** Its isolation group, whose other keys' waiters it wakes too ("" = none). */
  readonly group: string;
  expireAt: number;
}

/**
 * Which wait queue a lease granted by this broker belongs to, so that its release wakes the
 * waiters of its (pool, domain-key) at once, and those of its isolation group. Leases released
 * through another replica are forgotten a minute after their last known expiry.
 */
export class LeaseIndex {
  private readonly entries = new Map<string, IndexedLease>();
  private lastSweep = 0;

  constructor(private readonly clock: () => number) {}

  add(leaseId: string, lease: IndexedLease): void {
    this.entries.set(leaseId, lease);
    this.sweep();
  }

  touch(leaseId: string, expireAt: number): void {
    const e = this.entries.get(leaseId);
    if (e !== undefined) e.expireAt = expireAt;
  }

  /** Forget a lease and return it, if this broker granted it. */
  take(leaseId: string): IndexedLease | undefined {
    const e = this.entries.get(leaseId);
    this.entries.delete(leaseId);
    return e;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Leases not past their last known expiry. */
  live(): number {
    const now = this.clock();
    let n = 0;
    for (const e of this.entries.values()) if (e.expireAt > now) n++;
    return n;
  }

  private sweep(): void {
    const now = this.clock();
    if (now - this.lastSweep < 10_000) return;
    this.lastSweep = now;
    for (const [id, e] of this.entries) if (e.expireAt + 60_000 < now) this.entries.delete(id);
  }
}
