/**
 * Internal to the in-memory engine: all leases of the store (lease ids are global, renew and
 * release carry no pool), with lazy pruning of tombstones.
 *
 * Pruning is a rotating sweep (see `SweepQueue`): each call looks at a few leases, drops those
 * whose tombstone time is over and requeues the others. Every lease is looked at once per
 * rotation, so a tombstone outlives its minimum keep time by at most one rotation, and the table
 * stays proportional to the leases granted within that time.
 */
import { TOMBSTONE_MIN_MS } from "./context.js";
import type { LeaseRecord } from "./records.js";
import { SweepQueue } from "./sweep-queue.js";

/** Leases by id, live ones and tombstones. */
export class LeaseTable {
  private readonly leases = new Map<string, LeaseRecord>();
  private readonly queue = new SweepQueue<LeaseRecord>();

  /** Number of records, tombstones included. */
  get size(): number {
    return this.leases.size;
  }

  /** The lease with this id, if still kept. */
  get(leaseId: string): LeaseRecord | undefined {
    return this.leases.get(leaseId);
  }

  /** Store a new lease. */
  add(lease: LeaseRecord): void {
    this.leases.set(lease.leaseId, lease);
    this.queue.push(lease);
  }

  /** Look at up to `count` leases; drop tombstones whose keep time is over. */
  sweep(now: number, count: number): void {
    this.queue.sweep(count, (lease) => {
      if (!prunable(lease, now)) return true;
      this.leases.delete(lease.leaseId);
      return false;
    });
  }
}

/** Ended (released or expired) for at least max(longest ttl, 10 min). */
function prunable(lease: LeaseRecord, now: number): boolean {
  const endedAt = lease.released ? lease.releasedAt : lease.expireAt;
  if (endedAt > now) return false;
  return endedAt + Math.max(lease.longestTtlMs, TOMBSTONE_MIN_MS) <= now;
}
