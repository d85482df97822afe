import type { AcquireRequest } from "./broker-backend.js";
import type { LeaseOutcome } from "./lease.js";

/**
 * A broker lease this worker stopped using while the broker could not hear it: its release did
 * not arrive (the broker or its Redis was down), or a switch to fallback gave it up. The broker
 * still holds it until its TTL runs out, so the pair stays closed to everyone — also to this
 * worker's own hand-over of a fallback lease on that very pair — unless it is released there.
 */
export interface OwedRelease {
  readonly kind: "release";
  readonly leaseId: string;
  readonly fencingToken: number;
  readonly pool: string;
  readonly proxyId: string;
  readonly domainKey: string;
  readonly outcome: LeaseOutcome;
  /** Epoch ms when the lease ended here (the outcome's observation time). */
  readonly observedAt: number;
}

/**
 * An acquire the broker received but never answered (the stream broke first): it may have been
 * granted, and then the broker holds a lease nobody knows of until its TTL runs out. Sent again
 * with the same request id, it gets that lease back (the broker remembers a request id for 60 s),
 * to be given back or to carry a fallback lease on.
 */
export interface OwedRecall {
  readonly kind: "recall";
  readonly requestId: string;
  readonly request: AcquireRequest;
  /** Epoch ms when the acquire was sent: after the broker's 60 s memory of it, no use. */
  readonly sentAt: number;
}

export type Owed = OwedRelease | OwedRecall;

/**
 * What this worker owes the broker once it answers again (see `settleOwed`). At most `max`:
 * `keep` says false beyond that (the caller keeps only a release's outcome, and the lease then
 * ends by its TTL, as it would have without this list).
 */
export class OwedToBroker {
  private list: Owed[] = [];

  constructor(private readonly max: number) {}

  get size(): number {
    return this.list.length;
  }

  keep(o: Owed): boolean {
    if (this.list.some((x) => idOf(x) === idOf(o))) return true;
    if (this.list.length >= this.max) return false;
    this.list.push(o);
    return true;
  }

  /** Take everything owed (the caller puts back what it could not deliver). */
  take(): Owed[] {
    const all = this.list;
    this.list = [];
    return all;
  }
}

function idOf(o: Owed): string {
  return o.kind === "release" ? `lease:${o.leaseId}` : `req:${o.requestId}`;
}
