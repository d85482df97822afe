/**
 * Internal to the in-memory engine: which worker held which pair lately (store-semantics
 * §reportOutcomes), so that a worker's reported outcomes apply only to pairs it held. A grant or
 * renewal with `reportableMs` records (worker, domain-key, proxy) until the lease's expiry +
 * that long; entries are pruned lazily, a few per record.
 */
import { SweepQueue } from "./sweep-queue.js";

/** Entries looked at per record. */
const SWEEP = 2;

interface Entry {
  readonly key: string;
  readonly until: number;
}

export class HeldPairs {
  private readonly byKey = new Map<string, Entry>();
  private readonly queue = new SweepQueue<Entry>();

  /** `workerId` holds (domainKey, proxyId): recorded until `until` (the latest record says). */
  record(workerId: string, domainKey: string, proxyId: string, until: number, now: number): void {
    this.sweep(now);
    const entry = { key: keyOf(workerId, domainKey, proxyId), until };
    this.byKey.set(entry.key, entry);
    this.queue.push(entry);
  }

  /** Whether `workerId` is recorded as holding (domainKey, proxyId) at `now`. */
  held(workerId: string, domainKey: string, proxyId: string, now: number): boolean {
    return (this.byKey.get(keyOf(workerId, domainKey, proxyId))?.until ?? 0) > now;
  }

  private sweep(now: number): void {
    this.queue.sweep(SWEEP, (e) => {
      if (this.byKey.get(e.key) !== e) return false;
      if (e.until > now) return true;
      this.byKey.delete(e.key);
      return false;
    });
  }
}

function keyOf(workerId: string, domainKey: string, proxyId: string): string {
  return `${workerId}\n${domainKey}\n${proxyId}`;
}
