/**
 * Reservations of fallback shares (docs/spec.md §7). A worker that stopped answering may be leasing
 * the proxies of its rendezvous share from its local fallback pool; as long as that is possible,
 * the broker grants those proxies to that worker alone. A worker counts as silent when it was seen
 * within `fallbackWindowMs` but not within `absentAfterMs`, or not since this broker started (a
 * restarted broker cannot know who worked in fallback meanwhile). Seeing it again (an acquire, a
 * snapshot or membership refresh) lifts its reservations `LIFT_AFTER_MS` later, not at once: the
 * worker hands its fallback leases and pacing over to the broker first (its first contact is the
 * probe that precedes that hand-over). The share is computed as the worker computed it: over the
 * ACTIVE proxies and the workers live at its last contact.
 */
import { shareOf } from "@proxybroker/sdk/model";
import type { DomainUse, WorkerSeen } from "@proxybroker/sdk/model";
import { soleDomains } from "./sole-domains.js";
import type { LeaseStore } from "@proxybroker/sdk/engine";

export interface ReservationOptions {
  readonly store: LeaseStore;
  /** The pools to watch (the ones this broker served). */
  readonly pools: () => readonly string[];
  readonly clock: () => number;
  /** A worker not seen for this long may be in fallback. */
  readonly absentAfterMs: number;
  /** How long after its last contact a silent worker's share stays reserved. */
  readonly fallbackWindowMs: number;
  /** The "live workers" window of the snapshot (the rendezvous set workers shard over). */
  readonly liveWindowMs: number;
  /** How often the reservations are brought up to date. */
  readonly intervalMs: number;
  /** The domain-keys workers used lately (engine.domainUses); none: no domain-key is reserved whole. */
  readonly domainUses?: (pool: string) => Promise<readonly DomainUse[]>;
  /** How long a worker's use of a domain-key is listed after its last use. */
  readonly domainUseMs?: number;
  readonly onError?: (err: unknown) => void;
  /** The reservations of a pool were written (when the silent workers changed, or recomputed). */
  readonly onReserved?: (pool: string, reserved: ReservedSummary) => void;
}

/** What a write of a pool's reservations reserved, per silent worker. */
export interface ReservedSummary {
  readonly workers: readonly {
    readonly workerId: string;
    readonly proxies: number;
    readonly scope?: readonly string[];
    readonly whole: readonly string[];
  }[];
}

/** Proxies listed per page when the shares are computed. */
const PAGE = 1_000;
/** Shares are recomputed at least this often even when the silent workers stay the same. */
const RECOMPUTE_MS = 30_000;
/** A silent worker seen again keeps its reservations this long after the broker noticed. */
export const LIFT_AFTER_MS = 3_000;

export class Reservations {
  private readonly startedAt: number;
  /** The last time a store call failed as unreachable (0: never). */
  private outageAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** Per pool: the silent workers the current reservations were computed for, and when. */
  private readonly last = new Map<string, { key: string; at: number }>();
  /** Per pool: workers that were silent, by when they were noticed back (their reservations stay a while). */
  private readonly back = new Map<string, Map<string, { readonly seen: WorkerSeen; readonly at: number }>>();
  /** Per pool: the workers the last update saw (what `lost` puts back). */
  private readonly lastSeen = new Map<string, readonly WorkerSeen[]>();
  /** Per pool: the domain-key uses the last update saw (what `lost` puts back too). */
  private readonly lastUses = new Map<string, readonly DomainUse[]>();
  /** Per pool: the workers the last write reserved something for. */
  private readonly holders = new Map<string, ReadonlySet<string>>();

  constructor(private readonly opts: ReservationOptions) {
    this.startedAt = opts.clock();
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  /** Bring every watched pool's reservations up to date (one pass; overlapping calls skip). */
  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (const pool of this.opts.pools()) await this.update(pool);
    } catch (err) {
      this.opts.onError?.(err);
    } finally {
      this.running = false;
    }
  }

  /** Bring one pool's reservations up to date now (before this broker's first grant in it). */
  async ensure(pool: string): Promise<void> {
    await this.update(pool);
  }

  /**
   * The store was unreachable just now: workers may have gone to their fallback pools, and the
   * store could not record who did. Like after a restart of this broker, every worker not seen
   * since then counts as silent.
   */
  storeDown(): void {
    this.outageAt = this.opts.clock();
  }

  /**
   * The store lost the pool's state, and with it its record of the workers and the reservations
   * (a Redis wiped or restarted without its data). A worker leasing from its fallback pool right
   * then is silent, and nothing in the store says so any more: this broker puts back the workers
   * it saw (with their times, so the silent stay silent, for every replica), and writes the
   * reservations again at once.
   */
  async lost(pool: string): Promise<void> {
    this.last.delete(pool);
    await this.opts.store.rememberWorkers(pool, this.lastSeen.get(pool) ?? []);
    await this.opts.store.rememberDomainUses(pool, this.lastUses.get(pool) ?? []);
    await this.update(pool);
  }

  /**
   * Whether the pool's last reservations keep something from `workerId` (reserved for another
   * worker): then not every waiter can be served by the same proxies, and one may not wait behind
   * another in a single line.
   */
  reservesFromOthers(pool: string, workerId: string): boolean {
    const holders = this.holders.get(pool);
    if (holders === undefined || holders.size === 0) return false;
    return holders.size > 1 || !holders.has(workerId);
  }

  /** A worker seen since then is not silent (a renewal keeps it so, see `RenewParams.liveSince`). */
  liveSince(now: number = this.opts.clock()): number {
    return Math.max(now - this.opts.absentAfterMs, this.startedAt, this.outageAt);
  }

  /**
   * The silent workers of a pool among those seen within the fallback window — only those that
   * keep a fallback pool (they fetched a snapshot): a worker without one is not leasing anywhere
   * while it is silent.
   */
  silent(seen: readonly WorkerSeen[], now: number): WorkerSeen[] {
    const since = this.liveSince(now);
    return seen.filter((w) => w.lastSeenAt < since && w.fallbackPoolAt > 0);
  }

  /**
   * The workers whose shares stay reserved: the silent ones, and those seen again less than
   * `LIFT_AFTER_MS` ago (as of their last silent contact, so the share is the one they used).
   */
  private reservedFor(pool: string, seen: readonly WorkerSeen[], now: number): WorkerSeen[] {
    const silent = this.silent(seen, now);
    const silentIds = new Set(silent.map((w) => w.workerId));
    const previous = this.back.get(pool) ?? new Map<string, { seen: WorkerSeen; at: number }>();
    const next = new Map<string, { seen: WorkerSeen; at: number }>();
    for (const w of silent) next.set(w.workerId, { seen: w, at: Number.POSITIVE_INFINITY });
    for (const [id, was] of previous) {
      if (silentIds.has(id)) continue;
      const at = Math.min(was.at, now); // first noticed back now, or earlier
      if (now - at < LIFT_AFTER_MS) next.set(id, { seen: was.seen, at });
    }
    this.back.set(pool, next);
    return [...next.values()].map((v) => v.seen);
  }

  private async update(pool: string): Promise<void> {
    const { store } = this.opts;
    const now = this.opts.clock();
    const seen = await store.liveWorkers(pool, now - this.opts.fallbackWindowMs);
    this.lastSeen.set(pool, seen);
    const uses = this.opts.domainUses === undefined ? [] : await this.opts.domainUses(pool);
    this.lastUses.set(pool, uses);
    const silent = this.reservedFor(pool, seen, now);
    const at = { windowMs: this.opts.domainUseMs ?? 0, now };
    // per silent worker: the domain-keys reserved whole for it, and those its share is reserved
    // for (the ones it may use it for in fallback: those it is listed with)
    const plans = silent.map((w) => ({
      w,
      whole: soleDomains(w, uses, at).sort(),
      scope: this.opts.domainUses === undefined ? undefined : scopeOf(w.workerId, uses, at).sort(),
    }));
    // written again when any of it changed (a use recorded since is in the next read of the uses)
    const key = plans.length === 0 ? "" : JSON.stringify(plans.map((p) => [p.w.workerId, p.w.lastSeenAt, p.whole, p.scope ?? null]));
    const last = this.last.get(pool);
    if (last !== undefined && last.key === key && (key === "" || now - last.at < RECOMPUTE_MS)) return;
    const proxies: Record<string, string> = {};
    const domains: Record<string, string> = {};
    const scopes: Record<string, string[]> = {};
    if (plans.length > 0) {
      const ids = await activeProxies(store, pool);
      for (const { w, whole, scope } of plans) {
        const members = seen.filter((x) => x.lastSeenAt >= w.lastSeenAt - this.opts.liveWindowMs).map((x) => x.workerId);
        for (const id of shareOf(ids, members, w.workerId)) proxies[id] = w.workerId;
        for (const dk of whole) domains[dk] = w.workerId;
        if (scope !== undefined) scopes[w.workerId] = scope;
      }
    }
    await store.reserve(pool, { proxies, domains, scopes });
    this.holders.set(pool, new Set([...Object.values(proxies), ...Object.values(domains)]));
    this.last.set(pool, { key, at: now });
    this.opts.onReserved?.(pool, summarize(silent, { proxies, domains, scopes }));
  }
}

function summarize(
  silent: readonly WorkerSeen[],
  r: { readonly proxies: Record<string, string>; readonly domains: Record<string, string>; readonly scopes: Record<string, string[]> },
): ReservedSummary {
  const proxies = Object.values(r.proxies);
  const domains = Object.entries(r.domains);
  return {
    workers: silent.map((w) => ({
      workerId: w.workerId,
      proxies: proxies.filter((x) => x === w.workerId).length,
      ...(r.scopes[w.workerId] === undefined ? {} : { scope: r.scopes[w.workerId] }),
      whole: domains.filter(([, x]) => x === w.workerId).map(([k]) => k),
    })),
  };
}

/** The domain-keys `workerId` is listed with at `now`: the only ones it leases for in fallback. */
function scopeOf(workerId: string, uses: readonly DomainUse[], at: { readonly windowMs: number; readonly now: number }): string[] {
  return uses.filter((u) => u.workerId === workerId && u.lastUsedAt + at.windowMs > at.now).map((u) => u.domainKey);
}

/** The ids of the pool's ACTIVE proxies. */
async function activeProxies(store: LeaseStore, pool: string): Promise<string[]> {
  const ids: string[] = [];
  for (let after = ""; ; ) {
    const page = await store.listProxies(pool, { size: PAGE, after });
    for (const p of page.proxies) if (p.state === "ACTIVE") ids.push(p.id);
    if (page.next === "") return ids;
    after = page.next;
  }
}
