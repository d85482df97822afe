/**
 * The leases held through this broker's Lease streams — granted on one, or renewed on one since —
 * with the worker that holds each and how to tell it, so that a pair reserved for a silent
 * worker's fallback claim is taken back from everyone else at once (docs/spec.md §7): the holder
 * is sent LeaseLost REVOKED unasked and stops using the proxy, and the broker releases the lease,
 * so the pair is paced from now and free for the silent worker's hand-over when it comes back.
 * Leases granted through unary calls have no stream to tell: their renewals are refused, and a
 * worker in fallback waits for them as for raw stubs' (the longest lease TTL).
 *
 * Reusable leases (kept leases, docs/spec.md §5) are also indexed by (pool, domain-key), so that
 * an acquire that waits for a key, or a change of its pacing, asks their holders to give them back.
 */
import type { Reservations } from "@proxybroker/sdk/model";

export interface HeldLease {
  readonly pool: string;
  readonly proxyId: string;
  readonly domainKey: string;
  readonly workerId: string;
  readonly fencingToken: number;
  expireAt: number;
  /** Its holder keeps to the TTL its grant (or renewal) gave (`AcquireLeaseRequest.honors_lease_ttl`). */
  readonly honorsTtl?: boolean;
  /** Tell the holder the lease is revoked (its stream's LeaseLost), if it can still be told. */
  tell: () => void;
  /**
   * Granted reusable (kept leases): how to ask its holder to give it back (its stream's
   * LeaseWanted). Undefined: not reusable.
   */
  want?: () => void;
  /** Its holder was asked to give it back (`want` called). */
  asked?: boolean;
  /** The stream `want` reaches (any object that names it), for `unaskStream`. */
  stream?: object | undefined;
}

/** How long an entry outlives its last known expiry (a renewal through another replica may have extended it). */
const KEEP_MS = 60_000;
const SWEEP_EVERY_MS = 10_000;

export class HeldLeases {
  private readonly held = new Map<string, HeldLease>();
  /** The reusable leases held, by pool, then domain-key: lease id → lease. */
  private readonly reusable = new Map<string, Map<string, Map<string, HeldLease>>>();
  /** Asks so far (`wantBack` calls), and the last ask of each (pool, domain-key). */
  private asks = 0;
  private readonly lastAsk = new Map<string, { seq: number; at: number }>();
  private lastSweep = 0;

  constructor(private readonly clock: () => number) {}

  /** Taken before a request is decided, and given to `hold` with its grant (see there). */
  mark(): number {
    return this.asks;
  }

  /**
   * A lease was granted on a stream, or renewed on one (`tell` then reaches that stream). With
   * `want`, it is held reusable unless its domain-key was asked back since `since` (`mark()`
   * before the grant was decided: an acquire denied by this very lease while its grant was on its
   * way asked nobody). Asks of a whole pool do not count: an acquire's own reload of changed
   * policies makes one, and its grant is decided under the new policies. Returns whether it is
   * held reusable.
   */
  hold(leaseId: string, lease: HeldLease, since?: number): boolean {
    // held again (a retried request given its lease again): its index entry is the new one's
    const before = this.held.get(leaseId);
    if (before?.want !== undefined) this.unindex(leaseId, before);
    let held = lease;
    if (lease.want !== undefined && since !== undefined && this.askedSince(lease.pool, lease.domainKey, since)) {
      const { want: _, ...plain } = lease;
      held = plain;
    }
    this.held.set(leaseId, held);
    if (held.want !== undefined) this.index(leaseId, held);
    this.sweep();
    return held.want !== undefined;
  }

  /** A renewal on a stream: its new expiry, and the stream that now holds it. */
  renewed(leaseId: string, expireAt: number, tell: () => void, want?: () => void, stream?: object): void {
    const l = this.held.get(leaseId);
    if (l === undefined) return;
    l.expireAt = expireAt;
    l.tell = tell;
    if (l.want !== undefined && want !== undefined) {
      l.want = want;
      l.stream = stream;
    }
  }

  /** The lease ended (released, lost). */
  drop(leaseId: string): void {
    const l = this.held.get(leaseId);
    if (l === undefined) return;
    this.held.delete(leaseId);
    if (l.want !== undefined) this.unindex(leaseId, l);
  }

  /**
   * The lease is no longer to be asked back: its holder gives it back (a release of it is under
   * way: not by that release's own RATE_LIMITED outcome or denied `next` either), or the stream
   * that holds it closed (no give-back can come from there). It stays held until dropped.
   */
  unask(leaseId: string): void {
    const l = this.held.get(leaseId);
    if (l?.want !== undefined) this.unindex(leaseId, l);
  }

  /** `stream` closed: `unask` every reusable lease that only it could be asked for. */
  unaskStream(stream: object): void {
    for (const keys of [...this.reusable.values()]) {
      for (const leases of [...keys.values()]) {
        for (const [id, l] of [...leases]) if (l.stream === stream) this.unindex(id, l);
      }
    }
  }

  /**
   * Ask the holders of the reusable leases of `pool` on `domainKey` (every key when undefined) to
   * give them back: an acquire waits for the key or was denied, or its pacing or policies
   * changed. Each lease is asked once; it stays held until released. Returns how many reusable
   * leases of the key are held and asked back (now or before): give-backs to come.
   */
  wantBack(pool: string, domainKey?: string): number {
    this.asks++;
    if (domainKey !== undefined) this.lastAsk.set(askKey(pool, domainKey), { seq: this.asks, at: this.clock() });
    const keys = this.keysOf(pool, false);
    if (keys === undefined) return 0;
    const of = domainKey === undefined ? [...keys.values()] : [keys.get(domainKey)].filter((m) => m !== undefined);
    const now = this.clock();
    let pending = 0;
    for (const leases of of) {
      for (const l of leases.values()) {
        if (l.asked !== true) {
          l.asked = true;
          l.want?.();
        }
        // a lease past its known expiry (its holder gone, or renewing elsewhere) is no give-back to wait for
        if (l.expireAt > now) pending++;
      }
    }
    return pending;
  }

  /** Reusable leases not yet asked back (a metric, and for tests). */
  get reusableCount(): number {
    let n = 0;
    for (const keys of this.reusable.values())
      for (const leases of keys.values()) for (const l of leases.values()) if (l.asked !== true) n++;
    return n;
  }

  private askedSince(pool: string, domainKey: string, since: number): boolean {
    return (this.lastAsk.get(askKey(pool, domainKey))?.seq ?? 0) > since;
  }

  private keysOf(pool: string, make: true): Map<string, Map<string, HeldLease>>;
  private keysOf(pool: string, make: false): Map<string, Map<string, HeldLease>> | undefined;
  private keysOf(pool: string, make: boolean): Map<string, Map<string, HeldLease>> | undefined {
    let keys = this.reusable.get(pool);
    if (keys === undefined && make) {
      keys = new Map();
      this.reusable.set(pool, keys);
    }
    return keys;
  }

  private index(leaseId: string, lease: HeldLease): void {
    const keys = this.keysOf(lease.pool, true);
    let leases = keys.get(lease.domainKey);
    if (leases === undefined) {
      leases = new Map();
      keys.set(lease.domainKey, leases);
    }
    leases.set(leaseId, lease);
  }

  private unindex(leaseId: string, lease: HeldLease): void {
    const keys = this.reusable.get(lease.pool);
    const leases = keys?.get(lease.domainKey);
    if (leases === undefined || !leases.delete(leaseId) || leases.size > 0) return;
    keys?.delete(lease.domainKey);
    if (keys?.size === 0) this.reusable.delete(lease.pool);
  }

  get size(): number {
    return this.held.size;
  }

  /**
   * Take out the leases of `pool` that `reserved` keeps for another worker than their holder —
   * but a lease whose holder keeps to its TTL and that ends before that worker's reservation
   * holds (`Reservations.from`: it was granted for the gap before it); `shareKey` gives a
   * domain-key's share key (its isolation group's `#<group>`, or itself).
   */
  takeReserved(pool: string, reserved: Reservations, shareKey: (domainKey: string) => string): { leaseId: string; lease: HeldLease }[] {
    const out: { leaseId: string; lease: HeldLease }[] = [];
    for (const [leaseId, lease] of this.held) {
      if (lease.pool !== pool) continue;
      const owner = reservedFor(reserved, lease.proxyId, lease.domainKey, shareKey(lease.domainKey));
      if (owner === undefined || owner === lease.workerId) continue;
      if (lease.honorsTtl === true && lease.expireAt <= (reserved.from?.[owner] ?? 0)) continue;
      this.drop(leaseId);
      out.push({ leaseId, lease });
    }
    return out;
  }

  private sweep(): void {
    const now = this.clock();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    for (const [id, l] of this.held) if (l.expireAt + KEEP_MS < now) this.drop(id);
    for (const [key, ask] of this.lastAsk) if (ask.at + KEEP_MS < now) this.lastAsk.delete(key);
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

/** The key of the last ask of (pool, domain-key). */
function askKey(pool: string, domainKey: string): string {
  return `${pool}\u0000${domainKey}`;
}
