/**
 * A pool larger than one Redis node (POOL_SHARDS): a `LeaseStore` that spreads each sharded pool
 * over several store pools (its shards, see shard-map.ts) of one inner Redis store, and answers
 * for the pool as a whole. Unsharded pools pass straight through.
 *
 * - A proxy and everything about it lives in one shard, so G1, G2 and G4 are kept by the shard's
 *   own atomic scripts. An acquire tries the shards in the rendezvous order of its domain-key
 *   (one store step per shard tried), and is denied only when every shard denied it, with the
 *   earliest retry-after any of them knew. A sticky session lives on the first shard of its own
 *   key's order; an acquire of one proxy goes to that proxy's shard.
 * - A lease id names its shard: renewals and releases go there directly. A release with `next`
 *   is one step when the next acquire starts on the same shard, else a release and an acquire
 *   sent together.
 * - Policies are written to every shard; the epoch, the policy version and the event cursor are
 *   made of every shard's (composite.ts), so the loss of one shard's state holds grants on that
 *   shard only.
 */
import type {
  DomainUse,
  HoldState,
  Reservations,
  StoreServer,
  AcquireParams,
  AcquireResult,
  AuditEntry,
  DomainPacing,
  DomainPolicySpec,
  EpochRequest,
  EpochState,
  HealthResult,
  NewAuditEntry,
  NewPoolEvent,
  OutcomeReport,
  PolicySet,
  PoolEvent,
  PoolStats,
  ProxyAction,
  ProxyActionResult,
  ProxySpecInput,
  ProxyView,
  ReleaseParams,
  ReleaseResult,
  RenewParams,
  RenewResult,
  WorkerSeen,
  WorkerTouch,
  WorkerHeard,
} from "@proxybroker/sdk/model";
import type { Campaign, LeaseStore, ReleaseFeed } from "@proxybroker/sdk/engine";
import { decodeLeaseId } from "../redis/lease-id.js";
import { joinEpochs, joinVersions, splitCursor, splitEpoch, splitVersion } from "./composite.js";
import { assertLayout, checkLayout, type LayoutStore } from "./layout.js";
import { mergeDomainUses, mergeEvents, mergePacing, mergePages, mergeWorkers, sumStats } from "./merge.js";
import { ShardedReleaseFeed } from "./release-feed.js";
import { ShardPolicies } from "./shard-policies.js";
import type { ShardMap } from "./shard-map.js";

/** What a sharded store is built from. */
export interface ShardedStoreOptions {
  /** The store the shards live in (a Redis store: its lease ids name their pool). */
  readonly inner: ShardHost;
  readonly shards: ShardMap;
  /** The longest stretch one blocked event read waits on every shard before it looks again. Default 100 ms. */
  readonly eventRoundMs?: number;
  /** A best-effort step failed (spreading a raised interval, abandoning a lease no one got). */
  readonly onError?: (what: string, err: unknown) => void;
}

/**
 * The store the shards live in: a release feed shared by broker replicas, and a way to raise one
 * shard's adaptive pacing to another's (RedisStore).
 */
export type ShardHost = LeaseStore &
  LayoutStore & {
    releaseFeed(): ReleaseFeed;
    raisePacing(pool: string, pacing: DomainPacing): Promise<void>;
    addProxiesInLayout(
      pool: string,
      specs: readonly ProxySpecInput[],
      shards: number,
    ): Promise<{ layout: number; added: string[]; updated: string[] }>;
  };

/** How long a pool whose layout was found right goes unchecked. */
const LAYOUT_RECHECK_MS = 5_000;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** `p` for shard pool `pool` under that shard's policy version (written out: no object spread on the hot path). */
function onShard(p: AcquireParams, pool: string, policyVersion: string): AcquireParams {
  const out: Mutable<AcquireParams> = {
    pool,
    domainKey: p.domainKey,
    workerId: p.workerId,
    requestId: p.requestId,
    ttlMs: p.ttlMs,
    maxConcurrency: p.maxConcurrency,
    minIntervalMs: p.minIntervalMs,
    pacing: p.pacing,
    jitterMs: p.jitterMs,
    adaptive: p.adaptive,
    maxIntervalMs: p.maxIntervalMs,
    shadowKeys: p.shadowKeys,
    banTtlMs: p.banTtlMs,
    policyVersion,
    proxyId: p.proxyId,
    sessionKey: p.sessionKey,
    sessionTtlMs: p.sessionTtlMs,
    tier: p.tier,
    labels: p.labels,
  };
  if (p.fallbackPool !== undefined) out.fallbackPool = p.fallbackPool;
  if (p.yieldsLeases !== undefined) out.yieldsLeases = p.yieldsLeases;
  if (p.identity !== undefined) out.identity = p.identity;
  if (p.domainUseMs !== undefined) out.domainUseMs = p.domainUseMs;
  // a proxy's holds in its isolation groups lie on its own shard, with its pairs
  if (p.isolation !== undefined) out.isolation = p.isolation;
  return out;
}

/** A shard's answer with the pool's own name on its lease. */
function asPool(r: AcquireResult, pool: string): AcquireResult {
  if (r.kind !== "granted") return r;
  const l = r.lease;
  return {
    kind: "granted",
    lease: {
      leaseId: l.leaseId,
      fencingToken: l.fencingToken,
      pool,
      domainKey: l.domainKey,
      proxy: l.proxy,
      expireAt: l.expireAt,
      sessionKey: l.sessionKey,
      sessionRebound: l.sessionRebound,
    },
  };
}

/** The earlier of two retry-afters (-1 = unknown). */
function earlier(a: number, b: number): number {
  if (a < 0) return b;
  if (b < 0) return a;
  return Math.min(a, b);
}

/** `items` in their given order, keeping those `keep` holds. */
function inOrder<T>(items: readonly T[], keep: ReadonlySet<T>): T[] {
  return items.filter((i) => keep.has(i));
}

export class ShardedStore implements LeaseStore {
  private readonly inner: ShardHost;
  private readonly shards: ShardMap;
  private readonly eventRoundMs: number;
  private readonly onError: (what: string, err: unknown) => void;
  private readonly policies: ShardPolicies;
  private feed: ShardedReleaseFeed | undefined;
  /** Whether any pool has shards (else every lease call passes straight through). */
  private readonly anySharded: boolean;
  /** Pools whose layout was found right, and when. */
  private readonly layoutOk = new Map<string, number>();

  constructor(options: ShardedStoreOptions) {
    this.inner = options.inner;
    this.shards = options.shards;
    this.eventRoundMs = options.eventRoundMs ?? 100;
    this.onError = options.onError ?? (() => undefined);
    this.policies = new ShardPolicies(options.inner, options.shards);
    this.anySharded = options.shards.any();
  }

  /**
   * Refuse a pool stored in another shard layout (layout.ts). A pool found right is not checked
   * again for LAYOUT_RECHECK_MS: snapshots and reports read policies on every call, and each check
   * is a Redis round trip.
   */
  private async checked(pool: string): Promise<void> {
    const at = this.layoutOk.get(pool);
    const now = Date.now();
    if (at !== undefined && now - at < LAYOUT_RECHECK_MS) return;
    await checkLayout(this.inner, this.shards, pool);
    if (this.layoutOk.size >= 10_000) this.layoutOk.clear();
    this.layoutOk.set(pool, now);
  }

  /** `items` grouped by the shard of their proxy (`idOf`), each group handed to `call` with its shard's pool name. */
  private async perShard<T, R>(
    pool: string,
    items: readonly T[],
    idOf: (item: T) => string,
    call: (name: string, part: T[]) => Promise<R>,
  ): Promise<R[]> {
    const out: R[] = [];
    for (const [i, part] of this.shards.group(pool, items, idOf)) out.push(await call(this.shards.name(pool, i), part));
    return out;
  }

  private sharded(pool: string): boolean {
    return this.shards.count(pool) > 1;
  }

  /** The shards an acquire of `p` may be granted on, in the order to try them. */
  private orderOf(p: AcquireParams): number[] {
    if (p.proxyId !== "") return [this.shards.shardOf(p.pool, p.proxyId)];
    if (p.sessionKey !== "") return this.shards.order(p.pool, `s\x1f${p.sessionKey}`).slice(0, 1);
    return this.shards.order(p.pool, p.domainKey);
  }

  async acquire(params: AcquireParams): Promise<AcquireResult> {
    if (!this.sharded(params.pool)) return this.inner.acquire(params);
    return this.acquireFrom(params, this.orderOf(params), -1);
  }

  /** Try `order`'s shards one after another; `retry` is what shards tried before knew. */
  private async acquireFrom(params: AcquireParams, order: readonly number[], retry: number): Promise<AcquireResult> {
    const { pool } = params;
    const versions = splitVersion(params.policyVersion, this.shards.count(pool));
    for (const i of order) {
      const r = await this.inner.acquire(onShard(params, this.shards.name(pool, i), versions[i] ?? ""));
      if (r.kind === "granted") return asPool(r, pool);
      if (r.kind === "stale-policy") return this.stale(pool);
      retry = earlier(retry, r.retryAfterMs);
    }
    return { kind: "denied", retryAfterMs: retry };
  }

  private async stale(pool: string): Promise<AcquireResult> {
    return { kind: "stale-policy", version: (await this.listPolicies(pool)).version };
  }

  renew(params: RenewParams): Promise<RenewResult> {
    const isolationOf = params.isolationOf;
    if (isolationOf === undefined) return this.inner.renew(params);
    // the lease names its shard's pool; the policies are the pool's
    return this.inner.renew({
      ...params,
      isolationOf: (storePool, domainKey) => isolationOf(this.shards.parse(storePool).pool, domainKey),
    });
  }

  async release(params: ReleaseParams): Promise<ReleaseResult> {
    const next = params.next;
    // (a RATE_LIMITED spreads to the other shards: only when some pool has them)
    const limited = this.anySharded && params.outcome.kind === "RATE_LIMITED";
    if (!limited && (next === undefined || !this.sharded(next.pool))) return this.inner.release(params);
    const lease = decodeLeaseId(params.leaseId);
    const at = lease === undefined ? undefined : this.shards.parse(lease.pool);
    const r =
      next === undefined || !this.sharded(next.pool)
        ? await this.inner.release(params)
        : await this.releaseWithNext(params, next, lease?.pool, at);
    // a site's limit learned on one shard holds on all of them
    if (limited && lease !== undefined && at !== undefined && this.sharded(at.pool))
      await this.spreadPacing(at.pool, at.shard, lease.domainKey);
    return r;
  }

  /** Release, then acquire `next` of a sharded pool: one step when it starts on the lease's shard. */
  private async releaseWithNext(
    params: ReleaseParams,
    next: AcquireParams,
    storePool: string | undefined,
    at: { readonly pool: string; readonly shard: number } | undefined,
  ): Promise<ReleaseResult> {
    const order = this.orderOf(next);
    const bare = { leaseId: params.leaseId, fencingToken: params.fencingToken, outcome: params.outcome };
    let r: ReleaseResult;
    let answer: AcquireResult;
    if (storePool !== undefined && at !== undefined && at.pool === next.pool && order[0] === at.shard) {
      const versions = splitVersion(next.policyVersion, this.shards.count(next.pool));
      r = await this.inner.release({ ...bare, next: onShard(next, storePool, versions[at.shard] ?? "") });
      const n = r.next ?? { kind: "denied", retryAfterMs: -1 };
      if (n.kind === "granted") answer = asPool(n, next.pool);
      else if (n.kind === "stale-policy") answer = await this.stale(next.pool);
      else answer = await this.acquireFrom(next, order.slice(1), n.retryAfterMs);
    } else {
      // the next acquire starts on another shard, where the lease's proxy is no candidate: both
      // at once (each joins its shard's batch of this turn)
      const [released, acquired] = await Promise.allSettled([this.inner.release(bare), this.acquire(next)]);
      if (released.status === "rejected") {
        // the caller hears of the failed release only: a lease granted meanwhile is given back
        if (acquired.status === "fulfilled") this.abandon(acquired.value);
        throw released.reason;
      }
      if (acquired.status === "rejected") throw acquired.reason;
      r = released.value;
      answer = acquired.value;
    }
    return r.kind === "released" ? { kind: "released", next: answer } : { kind: "lost", reason: r.reason, next: answer };
  }

  /**
   * Raise the other shards' adaptive pacing of `domainKey` to shard `from`'s. Best effort: the
   * outcome itself is applied already, and a shard not raised still paces by the policy and
   * learns the limit itself.
   */
  private async spreadPacing(pool: string, from: number, domainKey: string): Promise<void> {
    try {
      const [pacing] = await this.inner.domainPacing(this.shards.name(pool, from), [domainKey], 1);
      if (pacing === undefined || (pacing.adaptiveMs <= 0 && pacing.learnedMs <= 0)) return;
      const others = this.shards.names(pool).filter((_, i) => i !== from);
      await Promise.all(others.map((name) => this.inner.raisePacing(name, pacing)));
    } catch (err: unknown) {
      this.onError(`spreading the raised interval of ${domainKey} in pool ${pool}`, err);
    }
  }

  /** Give back a lease nobody will use (best effort: else it frees at its TTL). */
  private abandon(r: AcquireResult): void {
    if (r.kind !== "granted") return;
    const outcome = { kind: "ABANDONED", httpStatus: 0, latencyMs: 0, retryAfterMs: 0 } as const;
    this.inner
      .release({ leaseId: r.lease.leaseId, fencingToken: r.lease.fencingToken, outcome })
      .catch((err: unknown) => this.onError(`giving back lease ${r.lease.leaseId}`, err));
  }

  async reportOutcomes(pool: string, reports: readonly OutcomeReport[]): Promise<number> {
    await this.checked(pool);
    if (!this.sharded(pool)) return this.inner.reportOutcomes(pool, reports);
    let applied = 0;
    for (const [i, part] of this.shards.group(pool, reports, (r) => r.proxyId)) {
      applied += await this.inner.reportOutcomes(this.shards.name(pool, i), part);
      const limited = new Set(part.filter((r) => r.outcome.kind === "RATE_LIMITED").map((r) => r.domainKey));
      for (const dk of limited) await this.spreadPacing(pool, i, dk);
    }
    return applied;
  }

  /**
   * Shard 0 first, its layout checked (and recorded) in the same step as its writes, whatever
   * the layout cache says: after a wipe, a broker that had just found the layout right would
   * otherwise import the proxies again without it, and every broker would then refuse the pool
   * as stored unsharded. A layout that is not this broker's writes nothing.
   */
  async addProxies(pool: string, specs: readonly ProxySpecInput[]): Promise<{ added: string[]; updated: string[] }> {
    const mine = this.shards.count(pool);
    const groups = this.shards.group(pool, specs, (p) => p.id);
    const first = await this.inner.addProxiesInLayout(pool, groups.get(0) ?? [], mine);
    assertLayout(pool, mine, first.layout);
    const results: { added: string[]; updated: string[] }[] = [first];
    for (const [i, part] of groups) if (i !== 0) results.push(await this.inner.addProxies(this.shards.name(pool, i), part));
    const ids = specs.map((p) => p.id);
    return {
      added: inOrder(ids, new Set(results.flatMap((r) => r.added))),
      updated: inOrder(ids, new Set(results.flatMap((r) => r.updated))),
    };
  }

  async removeProxies(pool: string, ids: readonly string[]): Promise<{ removed: string[]; notFound: string[] }> {
    await this.checked(pool);
    if (!this.sharded(pool)) return this.inner.removeProxies(pool, ids);
    const results = await this.perShard(
      pool,
      ids,
      (id) => id,
      (name, part) => this.inner.removeProxies(name, part),
    );
    const removed = new Set(results.flatMap((r) => r.removed));
    return { removed: inOrder(ids, removed), notFound: ids.filter((id) => !removed.has(id)) };
  }

  async restoreProxies(pool: string, ids: readonly string[]): Promise<{ restored: string[]; notFound: string[] }> {
    await this.checked(pool);
    if (!this.sharded(pool)) return this.inner.restoreProxies(pool, ids);
    const results = await this.perShard(
      pool,
      ids,
      (id) => id,
      (name, part) => this.inner.restoreProxies(name, part),
    );
    const restored = new Set(results.flatMap((r) => r.restored));
    return { restored: inOrder(ids, restored), notFound: ids.filter((id) => !restored.has(id)) };
  }

  async listProxies(pool: string, page: { size: number; after: string }): Promise<{ proxies: ProxyView[]; next: string }> {
    if (!this.sharded(pool)) return this.inner.listProxies(pool, page);
    const pages = await Promise.all(this.shards.names(pool).map((name) => this.inner.listProxies(name, page)));
    return mergePages(pages, page.size);
  }

  recordHealth(pool: string, id: string, result: HealthResult, term?: number): Promise<ProxyView | undefined> {
    const name = this.shards.name(pool, this.shards.shardOf(pool, id));
    return term === undefined ? this.inner.recordHealth(name, id, result) : this.inner.recordHealth(name, id, result, term);
  }

  campaign(name: string, owner: string, ttlMs: number): Promise<Campaign> {
    return this.inner.campaign(name, owner, ttlMs);
  }

  resign(name: string, owner: string): Promise<void> {
    return this.inner.resign(name, owner);
  }

  async poolStats(pool: string, liveSinceMs: number): Promise<PoolStats> {
    if (!this.sharded(pool)) return this.inner.poolStats(pool, liveSinceMs);
    const stats = await Promise.all(this.shards.names(pool).map((name) => this.inner.poolStats(name, liveSinceMs)));
    return sumStats(stats, (await this.liveWorkers(pool, liveSinceMs)).length);
  }

  async liveWorkers(pool: string, sinceMs: number, opts: { readonly claims?: boolean } = {}): Promise<WorkerSeen[]> {
    if (!this.sharded(pool)) return this.inner.liveWorkers(pool, sinceMs, opts);
    return mergeWorkers(await Promise.all(this.shards.names(pool).map((name) => this.inner.liveWorkers(name, sinceMs, opts))));
  }

  /** Recorded on every shard, so that each one's sweep of ids not seen for a week runs too. */
  async touchWorker(pool: string, workerId: string, touch: WorkerTouch = {}): Promise<void> {
    if (!this.sharded(pool)) return this.inner.touchWorker(pool, workerId, touch);
    await Promise.all(this.shards.names(pool).map((name) => this.inner.touchWorker(name, workerId, touch)));
  }

  /** On shard 0 only: a ping every second need not write every shard (`liveWorkers` merges every shard's). */
  hearWorker(pool: string, workerId: string, heard: WorkerHeard): Promise<void> {
    return this.inner.hearWorker(pool, workerId, heard);
  }

  /** Put back on shard 0 (`liveWorkers` merges every shard's). */
  rememberWorkers(pool: string, workers: readonly WorkerSeen[]): Promise<void> {
    return this.inner.rememberWorkers(pool, workers);
  }

  async forgetWorker(pool: string, workerId: string): Promise<boolean> {
    if (!this.sharded(pool)) return this.inner.forgetWorker(pool, workerId);
    const known = await Promise.all(this.shards.names(pool).map((name) => this.inner.forgetWorker(name, workerId)));
    return known.some((k) => k);
  }

  /** A proxy's on its shard; a domain-key's on every shard (any of them may grant its pairs). */
  async reserve(pool: string, reserved: Reservations): Promise<void> {
    if (!this.sharded(pool)) return this.inner.reserve(pool, reserved);
    const parts = this.shards.names(pool).map((): Record<string, string> => ({}));
    for (const [id, worker] of Object.entries(reserved.proxies)) {
      const part = parts[this.shards.shardOf(pool, id)];
      if (part !== undefined) part[id] = worker;
    }
    // every shard, so that one whose reservations all ended is cleared too
    await Promise.all(
      parts.map((part, i) =>
        this.inner.reserve(this.shards.name(pool, i), {
          proxies: part,
          domains: reserved.domains,
          ...(reserved.scopes === undefined ? {} : { scopes: reserved.scopes }),
        }),
      ),
    );
  }

  /** Every shard's records (an acquire records its use on each shard it tried), merged. */
  async domainUses(pool: string, sinceMs: number): Promise<DomainUse[]> {
    if (!this.sharded(pool)) return this.inner.domainUses(pool, sinceMs);
    return mergeDomainUses(await Promise.all(this.shards.names(pool).map((name) => this.inner.domainUses(name, sinceMs))));
  }

  /** Put back on shard 0 (`domainUses` merges every shard's). */
  rememberDomainUses(pool: string, uses: readonly DomainUse[]): Promise<void> {
    return this.inner.rememberDomainUses(pool, uses);
  }

  /** Held while any shard holds; the longest TTL of any shard. */
  async holdState(pool: string): Promise<HoldState> {
    if (!this.sharded(pool)) return this.inner.holdState(pool);
    const states = await Promise.all(this.shards.names(pool).map((name) => this.inner.holdState(name)));
    return {
      heldUntil: Math.max(0, ...states.map((s) => s.heldUntil)),
      longestTtlMs: Math.max(0, ...states.map((s) => s.longestTtlMs)),
      policyVersion: joinVersions(states.map((s) => s.policyVersion)),
    };
  }

  async setPolicy(pool: string, policy: DomainPolicySpec): Promise<void> {
    await this.checked(pool);
    if (!this.sharded(pool)) return this.inner.setPolicy(pool, policy);
    return this.policies.set(pool, policy);
  }

  async deletePolicy(pool: string, pattern: string): Promise<boolean> {
    await this.checked(pool);
    if (!this.sharded(pool)) return this.inner.deletePolicy(pool, pattern);
    return this.policies.delete(pool, pattern);
  }

  /**
   * The policies (shard-policies.ts), and the version, epoch and proxy count of all shards. Every
   * broker reads them before it serves a pool: the shard layout is checked here.
   */
  async listPolicies(pool: string): Promise<PolicySet> {
    await this.checked(pool);
    if (!this.sharded(pool)) return this.inner.listPolicies(pool);
    return this.policies.list(pool);
  }

  async domainPacing(pool: string, domainKeys: readonly string[], limit: number): Promise<DomainPacing[]> {
    if (!this.sharded(pool)) return this.inner.domainPacing(pool, domainKeys, limit);
    const lists = await Promise.all(this.shards.names(pool).map((name) => this.inner.domainPacing(name, domainKeys, limit)));
    return mergePacing(lists, domainKeys, limit);
  }

  /**
   * Every shard's epoch, each created or held on its own (one shard's loss holds only its grants),
   * a hold as long as the longest TTL granted lately on any shard of the pool.
   */
  async ensureEpoch(pool: string, request: EpochRequest): Promise<EpochState> {
    if (!this.sharded(pool)) return this.inner.ensureEpoch(pool, request);
    const expected = splitEpoch(request.expected, this.shards.count(pool));
    const holdMs = Math.max(request.holdMs, (await this.holdState(pool)).longestTtlMs);
    const states = await Promise.all(
      this.shards.names(pool).map((name, i) =>
        this.inner.ensureEpoch(name, {
          expected: expected[i] ?? "",
          holdMs,
          lost: request.lost,
          ...(request.since === undefined ? {} : { since: request.since }),
        }),
      ),
    );
    return { epoch: joinEpochs(states.map((s) => s.epoch)), grantsFrom: Math.max(...states.map((s) => s.grantsFrom)) };
  }

  server(): Promise<StoreServer> {
    return this.inner.server();
  }

  onReconnect(listener: () => void): void {
    this.inner.onReconnect?.(listener);
  }

  appendEvent(pool: string, event: NewPoolEvent): Promise<void> {
    return this.inner.appendEvent(pool, event);
  }

  /**
   * Every shard's events merged (merge.ts). With nothing new, a blocked read waits in rounds of at
   * most `eventRoundMs` on all shards at once: an event on any of them ends the wait at the end of
   * its round.
   */
  async readEvents(
    pool: string,
    after: string,
    opts: { readonly count: number; readonly blockMs: number },
  ): Promise<{ events: PoolEvent[]; cursor: string }> {
    if (!this.sharded(pool)) return this.inner.readEvents(pool, after, opts);
    const names = this.shards.names(pool);
    let from = splitCursor(after, names.length);
    const deadline = Date.now() + Math.max(0, opts.blockMs);
    let blockMs = 0;
    for (;;) {
      const at = from;
      const startedAt = Date.now();
      const reads = await Promise.all(names.map((name, i) => this.inner.readEvents(name, at[i] ?? "$", { count: opts.count, blockMs })));
      const merged = mergeEvents(at, reads, opts.count);
      if (merged.events.length > 0 || deadline - Date.now() <= 0) return merged;
      // a round that came back early with nothing (no blocking connection was free) waits out its
      // length: no busy loop
      const early = blockMs - (Date.now() - startedAt);
      if (early > 0) await new Promise((r) => setTimeout(r, Math.min(early, deadline - Date.now())));
      from = splitCursor(merged.cursor, names.length);
      blockMs = Math.max(1, Math.min(this.eventRoundMs, deadline - Date.now()));
    }
  }

  appendAudit(entry: NewAuditEntry): Promise<void> {
    return this.inner.appendAudit(entry);
  }

  listAudit(limit: number): Promise<AuditEntry[]> {
    return this.inner.listAudit(limit);
  }

  async proxyAction(pool: string, ids: readonly string[], action: ProxyAction): Promise<ProxyActionResult> {
    await this.checked(pool);
    if (!this.sharded(pool)) return this.inner.proxyAction(pool, ids, action);
    const results = await this.perShard(
      pool,
      ids,
      (id) => id,
      (name, part) => this.inner.proxyAction(name, part, action),
    );
    const changed = new Set(results.flatMap((r) => r.changed));
    const unchanged = new Set(results.flatMap((r) => r.unchanged));
    return {
      changed: inOrder(ids, changed),
      unchanged: inOrder(ids, unchanged),
      notFound: ids.filter((id) => !changed.has(id) && !unchanged.has(id)),
    };
  }

  ping(): Promise<boolean> {
    return this.inner.ping();
  }

  /** The inner store's feed, watching every shard of a pool and naming the pool in what it tells. */
  releaseFeed(): ReleaseFeed {
    this.feed ??= new ShardedReleaseFeed(this.inner.releaseFeed(), this.shards);
    return this.feed;
  }

  async close(): Promise<void> {
    await this.feed?.close();
    await this.inner.close();
  }
}
