/**
 * Internal to the in-memory engine: the grants of the last minute by (worker id, request id), so
 * that a retried acquire gets the lease the first one was granted, with lazy pruning.
 */
import { SweepQueue } from "./sweep-queue.js";

/** How long a grant answers a retry of its request. */
export const REQUEST_MEMORY_MS = 60_000;

interface Entry {
  readonly key: string;
  readonly leaseId: string;
  readonly until: number;
}

/** (worker id, request id) → lease id, each entry kept REQUEST_MEMORY_MS. */
export class RequestLog {
  private readonly byKey = new Map<string, Entry>();
  private readonly queue = new SweepQueue<Entry>();

  /** The lease granted to this request within the last minute, if any. */
  leaseOf(workerId: string, requestId: string, now: number): string | undefined {
    const e = this.byKey.get(keyOf(workerId, requestId));
    return e !== undefined && e.until > now ? e.leaseId : undefined;
  }

  /** Remember a grant. */
  record(workerId: string, requestId: string, leaseId: string, now: number): void {
    const entry = { key: keyOf(workerId, requestId), leaseId, until: now + REQUEST_MEMORY_MS };
    this.byKey.set(entry.key, entry);
    this.queue.push(entry);
  }

  /** Look at up to `count` entries; drop the expired ones. */
  sweep(now: number, count: number): void {
    this.queue.sweep(count, (e) => {
      if (e.until > now) return true;
      if (this.byKey.get(e.key) === e) this.byKey.delete(e.key);
      return false;
    });
  }
}

function keyOf(workerId: string, requestId: string): string {
  return `${workerId} ${requestId}`;
}
