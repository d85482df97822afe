/** Whom the release of a lease wakes. */
export interface LeaseWaiters {
  /** The wait queue of its (pool, domain-key). */
  readonly queueKey: string;
  readonly pool: string;
  /** Its isolation group, whose other keys' waiters it wakes too ("" = none). */
  readonly group: string;
}

/**
 * Which wait queue a lease granted by this broker belongs to, so that its release wakes the
 * waiters of its (pool, domain-key) at once, and those of its isolation group. Leases released
 * through another replica are forgotten a minute after their last known expiry.
 */
export class LeaseIndex {
  private readonly entries = new Map<string, { waiters: LeaseWaiters; expireAt: number }>();
  private lastSweep = 0;

  constructor(private readonly clock: () => number) {}

  add(leaseId: string, waiters: LeaseWaiters, expireAt: number): void {
    this.entries.set(leaseId, { waiters, expireAt });
    this.sweep();
  }

  touch(leaseId: string, expireAt: number): void {
    const e = this.entries.get(leaseId);
    if (e !== undefined) e.expireAt = expireAt;
  }

  /** Forget a lease and return whom its release wakes, if this broker granted it. */
  take(leaseId: string): LeaseWaiters | undefined {
    const e = this.entries.get(leaseId);
    this.entries.delete(leaseId);
    return e?.waiters;
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
