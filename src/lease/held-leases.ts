/**
 * The leases held through this broker's Lease streams — granted on one, or renewed on one since —
 * with the worker that holds each and how to tell it, so that a pair reserved for a silent
 * worker's fallback claim is taken back from everyone else at once (docs/spec.md §7): the holder
 * is sent LeaseLost REVOKED unasked and stops using the proxy, and the broker releases the lease,
 * so the pair is paced from now and free for the silent worker's hand-over when it comes back.
 * Leases granted through unary calls have no stream to tell: their renewals are refused, and a
 * worker in fallback waits for them as for raw stubs' (the longest lease TTL).
 */
import type { Reservations } from "@proxybroker/sdk/model";

export interface HeldLease {
  readonly pool: string;
  readonly proxyId: string;
  readonly domainKey: string;
  readonly workerId: string;
  readonly fencingToken: number;
  expireAt: number;
  /** Tell the holder the lease is revoked (its stream's LeaseLost), if it can still be told. */
  tell: () => void;
}

/** How long an entry outlives its last known expiry (a renewal through another replica may have extended it). */
const KEEP_MS = 60_000;
const SWEEP_EVERY_MS = 10_000;

export class HeldLeases {
  private readonly held = new Map<string, HeldLease>();
  private lastSweep = 0;

  constructor(private readonly clock: () => number) {}

  /** A lease was granted on a stream, or renewed on one (`tell` then reaches that stream). */
  hold(leaseId: string, lease: HeldLease): void {
    this.held.set(leaseId, lease);
    this.sweep();
  }

  /** A renewal on a stream: its new expiry, and the stream that now holds it. */
  renewed(leaseId: string, expireAt: number, tell: () => void): void {
    const l = this.held.get(leaseId);
    if (l === undefined) return;
    l.expireAt = expireAt;
    l.tell = tell;
  }

  /** The lease ended (released, lost). */
  drop(leaseId: string): void {
    this.held.delete(leaseId);
  }

  get size(): number {
    return this.held.size;
  }

  /**
   * Take out the leases of `pool` that `reserved` keeps for another worker than their holder;
   * `shareKey` gives a domain-key's share key (its isolation group's `#<group>`, or itself).
   */
  takeReserved(pool: string, reserved: Reservations, shareKey: (domainKey: string) => string): { leaseId: string; lease: HeldLease }[] {
    const out: { leaseId: string; lease: HeldLease }[] = [];
    for (const [leaseId, lease] of this.held) {
      if (lease.pool !== pool) continue;
      const owner = reservedFor(reserved, lease.proxyId, lease.domainKey, shareKey(lease.domainKey));
      if (owner === undefined || owner === lease.workerId) continue;
      this.held.delete(leaseId);
      out.push({ leaseId, lease });
    }
    return out;
  }

  private sweep(): void {
    const now = this.clock();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    for (const [id, l] of this.held) if (l.expireAt + KEEP_MS < now) this.held.delete(id);
  }
}

/**
 * The worker that `reserved` keeps the pair (proxy, domain-key) for, if any — as the stores read a
 * reservation: the domain-key (or its share key) reserved whole, or the proxy reserved for the
 * keys of its worker's scope (every key when it has none).
 */
export function reservedFor(reserved: Reservations, proxyId: string, domainKey: string, shareKey: string): string | undefined {
  const whole = reserved.domains[domainKey] ?? reserved.domains[shareKey];
  if (whole !== undefined) return whole;
  const owner = reserved.proxies[proxyId];
  if (owner === undefined) return undefined;
  const scope = reserved.scopes?.[owner];
  return scope === undefined || scope.includes(domainKey) || scope.includes(shareKey) ? owner : undefined;
}
