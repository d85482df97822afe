/**
 * Reservations of silent workers' fallback claims (docs/spec.md §7). A worker that keeps a
 * fallback pool tells the broker, in its pings, what it may lease from that pool while the broker
 * is unreachable — its claim (sdk/src/model/fallback-claim.ts) — and uses a claim only once a pong
 * acknowledged it; the store keeps its latest two. A worker counts as silent when the latest pong
 * it echoed (`WorkerSeen.heardAt`: proof that the broker's answers reached it) is older than
 * `absentAfterMs`, or from before this broker started or its store was last unreachable (it may
 * have fallen back meanwhile). For a silent worker the broker reserves exactly the pairs its two
 * claims name, read with the rule the worker itself applies (`claimedPairs`): the domain-keys it
 * may use with every proxy, whole; its rendezvous share for the domain-keys it may use it for. A
 * worker whose claims name nothing (not yet known to the others, or established for no
 * domain-key) has nothing reserved. Heard again, its reservations stay `LIFT_AFTER_MS` more: it
 * hands its fallback leases and pacing over to the broker first. The reservation ends with the
 * claim's keys, and at the latest `fallbackWindowMs` after the worker was last heard (it stops
 * serving from fallback before that). A worker noticed silent while this broker and its store
 * were up cannot serve its claim before `claimServedAt` (its fallback waits that long after its
 * last pong): until `GAP_MARGIN_MS` before then (`Reservations.from`) the stores grant its pairs
 * to callers that keep to their TTL, with a TTL that ends by then, so that its share does not
 * lie idle while it waits.
 */
import { GAP_MARGIN_MS, claimServedAt, claimedPairs, claimsAnything, shareOf } from "@proxybroker/sdk/model";
import type { DomainUse, ExitMember, FallbackClaim, Reservations as ReservationMap, WorkerSeen } from "@proxybroker/sdk/model";
import type { StoreProxies, StoreWorkers } from "@proxybroker/sdk/engine";

export interface ReservationOptions {
  readonly store: StoreProxies & StoreWorkers;
  /** The pools to watch (the ones this broker served). */
  readonly pools: () => readonly string[];
  readonly clock: () => number;
  /** A worker not heard (its echoed pong) for this long may be in fallback (WORKER_ABSENT_AFTER_MS). */
  readonly absentAfterMs: number;
  /** How long after it was last heard a silent worker's claim stays reserved. */
  readonly fallbackWindowMs: number;
  /** How often the reservations are brought up to date. */
  readonly intervalMs: number;
  /** The domain-keys workers used lately: kept to be put back when the store loses its state. */
  readonly domainUses?: (pool: string) => Promise<readonly DomainUse[]>;
  readonly onError?: (err: unknown) => void;
  /** The reservations of a pool were written (when the silent workers or their claims changed, or recomputed). */
  readonly onReserved?: (pool: string, summary: ReservedSummary, reserved: ReservationMap) => void;
}

/** What a write of a pool's reservations reserved, per silent worker. */
export interface ReservedSummary {
  readonly workers: readonly {
    readonly workerId: string;
    /** How long ago its latest echoed pong was sent (ms; absent: it never echoed one). */
    readonly heardAgoMs?: number;
    readonly proxies: number;
    readonly scope?: readonly string[];
    readonly whole: readonly string[];
  }[];
}

/** Proxies listed per page when the shares are computed. */
const PAGE = 1_000;
/** Shares are recomputed at least this often even when the silent workers stay the same. */
const RECOMPUTE_MS = 30_000;
/** A silent worker heard again keeps its reservations this long after the broker noticed. */
export const LIFT_AFTER_MS = 3_000;

export class Reservations {
  private readonly startedAt: number;
  /** The last time a store call failed as unreachable (0: never). */
  private outageAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** Per pool: what the current reservations were computed from, and when. */
  private readonly last = new Map<string, { key: string; at: number }>();
  /** Per pool: workers that were silent, by when they were noticed back (their reservations stay a while). */
  private readonly back = new Map<string, Map<string, { readonly seen: WorkerSeen; readonly at: number }>>();
  /** Per pool: the workers the last update saw, with their claims (what `lost` puts back). */
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
   * store could not record who did. Like after a restart of this broker, every worker not heard
   * since then counts as silent.
   */
  storeDown(): void {
    this.outageAt = this.opts.clock();
  }

  /**
   * The store lost the pool's state (a Redis wiped or restarted without its data), and with it its
   * record of the workers, their claims and the reservations. A worker leasing from its fallback
   * pool right then is silent, and nothing in the store says so any more: this broker puts back
   * the workers it saw (with their times and claims, so the silent stay silent, for every
   * replica), and writes the reservations again at once.
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

  /** A worker heard (or, for renewals, seen) since then is not silent. */
  liveSince(now: number = this.opts.clock()): number {
    return Math.max(now - this.opts.absentAfterMs, this.startedAt, this.outageAt);
  }

  /**
   * The silent workers among `seen` at `now`: those that keep a fallback pool, claim something,
   * were not heard since `liveSince` and were heard (or seen) within the fallback window.
   */
  silent(seen: readonly WorkerSeen[], now: number): WorkerSeen[] {
    const since = this.liveSince(now);
    return seen.filter(
      (w) =>
        w.fallbackPoolAt > 0 &&
        (w.heardAt ?? 0) < since &&
        (w.heardAt ?? w.lastSeenAt) >= now - this.opts.fallbackWindowMs &&
        (w.claims ?? []).some((c) => claimsAnything(c, now)),
    );
  }

  /**
   * When a silent worker's reservations hold for every caller: `GAP_MARGIN_MS` before the
   * earliest moment its fallback pool may serve its claim, counted from its last echoed pong —
   * only when that pong came while this broker and its store were up (else it may be in fallback
   * already: 0, at once).
   */
  private holdsFrom(w: WorkerSeen): number {
    const heardAt = w.heardAt;
    if (heardAt === undefined || heardAt < Math.max(this.startedAt, this.outageAt)) return 0;
    return claimServedAt(heardAt, { absentAfterMs: this.opts.absentAfterMs, reserveIntervalMs: this.opts.intervalMs }) - GAP_MARGIN_MS;
  }

  /**
   * The workers whose claims stay reserved: the silent ones, and those heard again less than
   * `LIFT_AFTER_MS` ago (with the claims they had while silent; `silent` false).
   */
  private reservedFor(pool: string, seen: readonly WorkerSeen[], now: number): { seen: WorkerSeen; silent: boolean }[] {
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
    return [...next.values()].map((v) => ({ seen: v.seen, silent: silentIds.has(v.seen.workerId) }));
  }

  private async update(pool: string): Promise<void> {
    const { store } = this.opts;
    const now = this.opts.clock();
    const seen = await store.liveWorkers(pool, now - this.opts.fallbackWindowMs, { claims: true });
    this.lastSeen.set(pool, seen);
    if (this.opts.domainUses !== undefined) this.lastUses.set(pool, await this.opts.domainUses(pool));
    const holders = this.reservedFor(pool, seen, now).map(({ seen: w, silent }) => ({
      workerId: w.workerId,
      heardAt: w.heardAt,
      from: silent ? this.holdsFrom(w) : 0,
      claims: liveClaims(w.claims ?? [], now),
    }));
    // written again when what it is computed from changed (a key's end, a new claim), and every RECOMPUTE_MS
    const key = JSON.stringify(holders.map((h) => [h.workerId, h.claims.map((c) => [c.version, c.keys.map((k) => k.domainKey)])]));
    const last = this.last.get(pool);
    if (last !== undefined && last.key === key && (holders.length === 0 || now - last.at < RECOMPUTE_MS)) return;
    const reserved =
      holders.length === 0 ? NOTHING : { ...reserve(holders, await proxyMembers(store, pool), now), from: fromOf(holders, now) };
    await store.reserve(pool, reserved);
    this.holders.set(pool, new Set([...Object.values(reserved.proxies), ...Object.values(reserved.domains)]));
    this.last.set(pool, { key, at: now });
    this.opts.onReserved?.(pool, summarize(holders, reserved, now), reserved);
  }
}

const NOTHING: ReservationMap = { proxies: {}, domains: {}, scopes: {} };

/** When each holder's reservations hold for every caller, for those for which that is still to come. */
function fromOf(holders: readonly { workerId: string; from: number }[], now: number): Record<string, number> {
  const from: Record<string, number> = {};
  for (const h of holders) if (h.from > now) from[h.workerId] = h.from;
  return from;
}

/** The claims that still name something at `now`, each with only its live keys. */
function liveClaims(claims: readonly FallbackClaim[], now: number): FallbackClaim[] {
  return claims.map((c) => ({ ...c, keys: c.keys.filter((k) => k.untilMs > now) })).filter((c) => c.keys.length > 0);
}

/**
 * What the claims of the holders reserve, read with `claimedPairs` — the rule their fallback pools
 * apply: the keys named whole (the domain-key and its share key: `#<group>` reads as every key of
 * the group), and the share for the keys named with it (the worker's scope).
 */
function reserve(
  holders: readonly { workerId: string; claims: readonly FallbackClaim[] }[],
  members: readonly ExitMember[],
  now: number,
): ReservationMap {
  const ids = members.map((m) => m.id);
  const proxies: Record<string, string> = {};
  const domains: Record<string, string> = {};
  const scopes: Record<string, string[]> = {};
  for (const { workerId, claims } of holders) {
    const scope = new Set<string>();
    for (const claim of claims) {
      const pairs = claimedPairs(claim, workerId, members, now);
      for (const k of pairs.whole) {
        domains[k.domainKey] = workerId;
        domains[k.shareKey] = workerId;
      }
      for (const k of pairs.shared) scope.add(k.domainKey).add(k.shareKey);
      for (const id of pairs.share) proxies[id] = workerId;
      // G9: the worker cut its share by the exits of its snapshot, which may predate the exits
      // known now: its share as if no exit were known is reserved too (what a snapshot taken
      // before the first probes gives), so a proxy it may use is never granted to another
      for (const id of pairs.shared.length === 0 ? [] : shareOf(ids, claim.members, workerId)) proxies[id] ??= workerId;
    }
    scopes[workerId] = [...scope].sort();
  }
  return { proxies, domains, scopes };
}

function summarize(holders: readonly { workerId: string; heardAt: number | undefined }[], r: ReservationMap, now: number): ReservedSummary {
  const proxies = Object.values(r.proxies);
  const domains = Object.entries(r.domains);
  return {
    workers: holders.map(({ workerId, heardAt }) => ({
      workerId,
      ...(heardAt === undefined ? {} : { heardAgoMs: now - heardAt }),
      proxies: proxies.filter((x) => x === workerId).length,
      ...(r.scopes?.[workerId] === undefined ? {} : { scope: r.scopes[workerId] }),
      whole: domains.filter(([, x]) => x === workerId).map(([k]) => k),
    })),
  };
}

/**
 * The pool's proxies with their exits (G9: fallback shares are cut per exit), whatever their state: a worker's snapshot may hold as ACTIVE a
 * proxy quarantined since, and it comes back by itself (reserving it costs nobody anything).
 */
async function proxyMembers(store: StoreProxies & StoreWorkers, pool: string): Promise<ExitMember[]> {
  const members: ExitMember[] = [];
  for (let after = ""; ; ) {
    const page = await store.listProxies(pool, { size: PAGE, after });
    for (const p of page.proxies) members.push({ id: p.id, exitIp: p.exitIp });
    if (page.next === "") return members;
    after = page.next;
  }
}
