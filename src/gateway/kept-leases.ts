import type { LeaseOutcome } from "@proxybroker/sdk";
import type { Taken } from "./outcome.js";

/**
 * Kept leases (docs/gateway.md): a reusable lease whose request went well is kept, idle, for the
 * next request of the same (pool, host, tier, labels), which then needs no round trip to the
 * broker. The broker grants a lease reusable only while its pair is known not to be paced (a
 * policy names the host and sets no interval; never a host it still learns), so requests sent
 * through it one after another reach the site as a new grant of the pair would; it is still
 * exclusive, and only one request at a time holds it (an idle lease is taken by one).
 *
 * A kept lease is released — with the outcome of its last request — when the broker asks for it
 * back (another acquire waits for its domain-key, or its pacing or policies changed), when it has
 * been idle `idleMs`, when it was first granted `maxMs` ago, when it was lost, and when the
 * gateway stops. A request that did not succeed releases its lease at once, and a RATE_LIMITED or
 * BLOCKED one gives back every lease kept for its domain-key.
 */
export interface KeptLeasesOptions {
  /** How long a lease is kept idle at most; 0: no lease is kept. */
  readonly idleMs: number;
  /** How long after it was first kept a lease is kept at most (then given back to the broker's queue). */
  readonly maxMs: number;
  readonly clock?: () => number;
}

interface Idle {
  readonly taken: Taken;
  /** The last request's outcome: the release carries it. */
  readonly outcome: LeaseOutcome;
  readonly since: number;
  readonly unwatch: () => void;
}

export class KeptLeases {
  /** Idle leases by key, the most recently used last. */
  private readonly idle = new Map<string, Idle[]>();
  /** When each lease kept so far was first kept (its grant, near enough). */
  private readonly firstKept = new WeakMap<Taken["lease"], number>();
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private count = 0;

  constructor(private readonly opts: KeptLeasesOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  /** Leases kept idle now. */
  get size(): number {
    return this.count;
  }

  /** The key of a request's lease; undefined: not to be kept (a session has its own binding). */
  static keyOf(p: {
    readonly pool: string;
    readonly host: string;
    readonly port: number;
    readonly session: string | undefined;
    readonly tier: string | undefined;
    readonly labels: Readonly<Record<string, string>>;
  }): string | undefined {
    if (p.session !== undefined) return undefined;
    const names = Object.keys(p.labels);
    const labels =
      names.length === 0
        ? ""
        : names
            .sort()
            .map((k) => `${k}=${p.labels[k] ?? ""}`)
            .join(",");
    return `${p.pool}\u0000${p.host.toLowerCase()}:${p.port}\u0000${p.tier ?? ""}\u0000${labels}`;
  }

  /** An idle lease for `key`, now held by the caller; undefined when none can be used. */
  take(key: string): Taken | undefined {
    const list = this.idle.get(key);
    if (list === undefined) return undefined;
    const now = this.clock();
    for (let entry = list.pop(); entry !== undefined; entry = list.pop()) {
      this.count--;
      entry.unwatch();
      if (this.usable(entry.taken, now)) {
        if (list.length === 0) this.idle.delete(key);
        return entry.taken;
      }
      void this.release(entry.taken, entry.outcome);
    }
    this.idle.delete(key);
    return undefined;
  }

  /**
   * A request through `taken` ended with `outcome`: its lease is kept for the next request of `key`
   * when it can be (undefined returned), else released with the outcome (resolved once released).
   */
  finish(key: string | undefined, taken: Taken, outcome: LeaseOutcome): Promise<void> | undefined {
    const now = this.clock();
    if (outcome.kind === "RATE_LIMITED" || outcome.kind === "BLOCKED") this.giveBack(taken);
    if (key === undefined || outcome.kind !== "SUCCESS" || !this.usable(taken, now)) return this.release(taken, outcome);
    if (!this.firstKept.has(taken.lease)) this.firstKept.set(taken.lease, now);
    const entry: Idle = {
      taken,
      outcome,
      since: now,
      // asked back while idle: released at once
      unwatch: taken.lease.onWanted(() => this.drop(key, entry)),
    };
    let list = this.idle.get(key);
    if (list === undefined) {
      list = [];
      this.idle.set(key, list);
    }
    list.push(entry);
    this.count++;
    this.arm();
    return undefined;
  }

  /** Release every idle lease (the gateway stops); no lease is kept from now on. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    const all = [...this.idle.values()].flat();
    this.idle.clear();
    this.count = 0;
    for (const e of all) e.unwatch();
    await Promise.all(all.map((e) => this.release(e.taken, e.outcome)));
  }

  /**
   * Give back every idle lease of the domain-key (and pool) of `taken`, whatever host, tier or
   * labels it was kept for: the site answered RATE_LIMITED or BLOCKED, it may be paced now.
   */
  private giveBack(taken: Taken): void {
    for (const [key, list] of [...this.idle]) {
      for (const e of [...list]) {
        if (e.taken.client === taken.client && e.taken.lease.domain === taken.lease.domain) this.drop(key, e);
      }
    }
  }

  /** Take `entry` out of its list and release it (asked back, or too old). */
  private drop(key: string, entry: Idle): void {
    const list = this.idle.get(key);
    const at = list?.indexOf(entry) ?? -1;
    if (list === undefined || at < 0) return;
    list.splice(at, 1);
    if (list.length === 0) this.idle.delete(key);
    this.count--;
    entry.unwatch();
    void this.release(entry.taken, entry.outcome);
  }

  private usable(taken: Taken, now: number): boolean {
    const l = taken.lease;
    if (this.closed || this.opts.idleMs <= 0 || !l.reusable || l.wanted || l.ended || l.signal.aborted) return false;
    return now - (this.firstKept.get(l) ?? now) < this.opts.maxMs;
  }

  /** Sweep idle leases past `idleMs` or `maxMs`, while any are kept. */
  private arm(): void {
    if (this.timer !== undefined) return;
    const every = Math.max(10, Math.floor(Math.min(this.opts.idleMs, this.opts.maxMs) / 2));
    this.timer = setInterval(() => this.sweep(), every);
    this.timer.unref();
  }

  private sweep(): void {
    const now = this.clock();
    for (const [key, list] of [...this.idle]) {
      for (const e of [...list]) if (now - e.since >= this.opts.idleMs || !this.usable(e.taken, now)) this.drop(key, e);
    }
    if (this.count === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async release(taken: Taken, outcome: LeaseOutcome): Promise<void> {
    await taken.lease.release(outcome).catch(() => undefined);
  }
}
