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
 *
 * Isolation groups (G8): workers' fallback pools cut their shares per share key — a domain-key,
 * or `#<group>` for every key of an isolation group (shareKeyOf, sdk/src/model/isolation.ts) — and so are
 * the reservations: a scope entry or a whole reservation of a grouped key is written as
 * `#<group>`, which the store reads as every domain-key of that group. A silent worker sole on
 * `#G` may be on any proxy for a key of G; one that shares `#G` may be on the proxies of its share
 * for one: others get neither, for no key of G.
 */
import { shareOf } from "@proxybroker/sdk/model";
import type { DomainPolicySpec, DomainUse, WorkerSeen } from "@proxybroker/sdk/model";
import { soleDomains, VIEW_LAG_MS } from "./sole-domains.js";
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
  /**
   * G8: the share key of a domain-key under a pool's policies — the SDK's `shareKeyOf`
   * (shareKeyOf, sdk/src/model/isolation.ts), the mapping the workers' fallback pools use. With it, the
   * domain-keys are reserved by share key, under each policy set a silent worker's fallback pool
   * may hold (`POLICY_LAG_MS`). Absent: by domain-key (no isolation group is kept apart in
   * fallback).
   */
  readonly shareKey?: (policies: readonly DomainPolicySpec[], domainKey: string) => string;
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
/**
 * How much older than a worker's last contact the policies of its fallback pool may be: it
 * fetches the whole snapshot again as soon as a membership list (at most 30 s apart) shows
 * another policy version. A silent worker's share is reserved under every policy set that was
 * current since its last contact minus this: a worker cut off right after a change still cuts
 * its shares by the set before it.
 */
export const POLICY_LAG_MS = VIEW_LAG_MS;

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
    // the uses by share key, once per policy set a silent worker may hold
    const keyings = silent.length === 0 ? [] : await this.byShareKey(pool, uses);
    // per silent worker: the share keys reserved whole for it, and those its share is reserved
    // for (the ones it may use it for in fallback: those it is listed with), under each policy
    // set its fallback pool may hold
    const plans = silent.map((w) => {
      const held = keyings.filter((k) => k.currentUntil >= w.lastSeenAt - POLICY_LAG_MS).map((k) => k.uses);
      return {
        w,
        whole: union(held.map((k) => soleDomains(w, k, at))),
        scope: this.opts.domainUses === undefined ? undefined : union(held.map((k) => scopeOf(w.workerId, k, at))),
      };
    });
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

  /**
   * `uses` with each domain-key replaced by its share key, once per distinct mapping among the
   * pool's current policy set and the replaced sets the store keeps, each with the time until
   * which its set was current (the latest, when two map alike). Without `shareKey`, `uses` as
   * they are.
   */
  private async byShareKey(pool: string, uses: readonly DomainUse[]): Promise<Keying[]> {
    const shareKey = this.opts.shareKey;
    if (shareKey === undefined || uses.length === 0) return [{ currentUntil: Number.POSITIVE_INFINITY, uses }];
    const set = await this.opts.store.listPolicies(pool);
    const sets = [
      { until: Number.POSITIVE_INFINITY, policies: set.policies },
      ...set.history.map((h) => ({ until: h.retiredAt, policies: h.policies })),
    ];
    const out = new Map<string, Keying>();
    for (const { until, policies } of sets) {
      const keys = new Map<string, string>();
      const keyed = uses.map((u) => {
        let key = keys.get(u.domainKey);
        if (key === undefined) {
          key = shareKey(policies, u.domainKey);
          keys.set(u.domainKey, key);
        }
        return key === u.domainKey ? u : { ...u, domainKey: key };
      });
      const mapping = JSON.stringify([...keys]);
      const same = out.get(mapping);
      if (same === undefined || same.currentUntil < until) out.set(mapping, { currentUntil: until, uses: keyed });
    }
    return [...out.values()];
  }
}

/** The domain-uses keyed by share key under one policy set, current until `currentUntil` (epoch ms). */
interface Keying {
  readonly currentUntil: number;
  readonly uses: readonly DomainUse[];
}

/** The distinct keys of `lists`, sorted. */
function union(lists: readonly (readonly string[])[]): string[] {
  return [...new Set(lists.flat())].sort();
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

/**
 * The (share) keys `workerId` is listed with at `now`: the only ones it leases for in fallback
 * (by share key: other workers stay off its share for every key of a group it is listed with).
 */
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
