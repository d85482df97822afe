/**
 * A pool larger than one Redis node (POOL_SHARDS): a `LeaseStore` that spreads each sharded pool
 * over several store pools (its shards, see shard-map.ts) of one inner Redis store, and answers
 * for the pool as a whole. Unsharded pools pass straight through, and so do the roles no shard
 * changes (the leader, the audit trail, the server).
 *
 * Each role's answer for a sharded pool is in its own file: shard-leases.ts, shard-proxies.ts,
 * shard-workers.ts, shard-policies.ts, shard-events.ts and shard-recovery.ts. Policies are written
 * to every shard; the epoch, the policy version and the event cursor are made of every shard's
 * (composite.ts), so the loss of one shard's state holds grants on that shard only.
 */
import type {
  LeaseStore,
  ReleaseFeed,
  StoreEvents,
  StoreLeader,
  StoreLeases,
  StorePolicies,
  StoreProxies,
  StoreRecovery,
  StoreSources,
  StoreWorkers,
} from "@proxybroker/sdk/engine";
import type { ShardHost } from "./host.js";
import { LayoutCache } from "./layout.js";
import { ShardedReleaseFeed } from "./release-feed.js";
import { ShardEvents } from "./shard-events.js";
import { ShardLeases } from "./shard-leases.js";
import type { ShardMap } from "./shard-map.js";
import { ShardPolicies } from "./shard-policies.js";
import { ShardProxies } from "./shard-proxies.js";
import { ShardRecovery } from "./shard-recovery.js";
import { ShardWorkers } from "./shard-workers.js";

export type { ShardHost } from "./host.js";

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

export class ShardedStore implements LeaseStore {
  private readonly inner: ShardHost;
  private readonly shards: ShardMap;
  /** Refuses a pool stored in another shard layout (layout.ts). */
  private readonly layout: LayoutCache;
  private readonly leases: ShardLeases;
  private readonly proxies: ShardProxies;
  private readonly workers: ShardWorkers;
  private readonly policies: ShardPolicies;
  private readonly events: ShardEvents;
  private readonly recovery: ShardRecovery;
  private feed: ShardedReleaseFeed | undefined;

  constructor(options: ShardedStoreOptions) {
    const at = { inner: options.inner, shards: options.shards };
    this.inner = options.inner;
    this.shards = options.shards;
    this.layout = new LayoutCache(options.inner, options.shards);
    this.policies = new ShardPolicies(options.inner, options.shards);
    this.workers = new ShardWorkers(at);
    this.proxies = new ShardProxies(at, this.workers);
    this.events = new ShardEvents(at, options.eventRoundMs ?? 100);
    this.recovery = new ShardRecovery(at);
    this.leases = new ShardLeases({
      ...at,
      layout: this.layout,
      policies: this.policies,
      onError: options.onError ?? (() => undefined),
    });
  }

  /** `spread` for a pool with shards; the inner store answers for an unsharded pool itself. */
  private on<R>(pool: string, spread: R): R | ShardHost {
    return this.shards.count(pool) > 1 ? spread : this.inner;
  }

  // Leases: routed by the lease's pool (shard-leases.ts). A report's pool is checked first.
  readonly acquire: StoreLeases["acquire"] = (params) => this.leases.acquire(params);
  readonly renew: StoreLeases["renew"] = (params) => this.leases.renew(params);
  readonly release: StoreLeases["release"] = (params) => this.leases.release(params);
  readonly reportOutcomes: StoreLeases["reportOutcomes"] = (pool, reports) => this.leases.reportOutcomes(pool, reports);

  // Proxies: writes and admin actions check the pool's layout first. An import checks and records
  // it with its writes (shard-proxies.ts); a health result goes to its proxy's shard.
  readonly addProxies: StoreProxies["addProxies"] = (pool, specs) => this.proxies.addProxies(pool, specs);
  readonly removeProxies: StoreProxies["removeProxies"] = async (pool, ids) => {
    await this.layout.check(pool);
    return this.on(pool, this.proxies).removeProxies(pool, ids);
  };
  readonly restoreProxies: StoreProxies["restoreProxies"] = async (pool, ids) => {
    await this.layout.check(pool);
    return this.on(pool, this.proxies).restoreProxies(pool, ids);
  };
  readonly proxyAction: StoreProxies["proxyAction"] = async (pool, ids, action) => {
    await this.layout.check(pool);
    return this.on(pool, this.proxies).proxyAction(pool, ids, action);
  };
  readonly listProxies: StoreProxies["listProxies"] = (pool, page) => this.on(pool, this.proxies).listProxies(pool, page);
  readonly recordHealth: StoreProxies["recordHealth"] = (pool, id, result, term, exitIp) =>
    this.proxies.recordHealth(pool, id, result, term, exitIp);
  readonly poolStats: StoreProxies["poolStats"] = (pool, liveSinceMs) => this.on(pool, this.proxies).poolStats(pool, liveSinceMs);

  // Workers and reservations.
  readonly liveWorkers: StoreWorkers["liveWorkers"] = (pool, sinceMs, opts = {}) =>
    this.on(pool, this.workers).liveWorkers(pool, sinceMs, opts);
  readonly touchWorker: StoreWorkers["touchWorker"] = (pool, workerId, touch = {}) =>
    this.on(pool, this.workers).touchWorker(pool, workerId, touch);
  readonly hearWorker: StoreWorkers["hearWorker"] = (pool, workerId, heard) => this.workers.hearWorker(pool, workerId, heard);
  readonly rememberWorkers: StoreWorkers["rememberWorkers"] = (pool, workers) => this.workers.rememberWorkers(pool, workers);
  readonly forgetWorker: StoreWorkers["forgetWorker"] = (pool, workerId) => this.on(pool, this.workers).forgetWorker(pool, workerId);
  readonly reserve: StoreWorkers["reserve"] = (pool, reserved) => this.on(pool, this.workers).reserve(pool, reserved);
  readonly domainUses: StoreWorkers["domainUses"] = (pool, sinceMs) => this.on(pool, this.workers).domainUses(pool, sinceMs);
  readonly rememberDomainUses: StoreWorkers["rememberDomainUses"] = (pool, uses) => this.workers.rememberDomainUses(pool, uses);

  // Policies and pacing: every broker reads the policies before it serves a pool, so the layout
  // is checked there (and on writes).
  readonly setPolicy: StorePolicies["setPolicy"] = async (pool, policy) => {
    await this.layout.check(pool);
    return this.on(pool, this.policies).setPolicy(pool, policy);
  };
  readonly deletePolicy: StorePolicies["deletePolicy"] = async (pool, pattern) => {
    await this.layout.check(pool);
    return this.on(pool, this.policies).deletePolicy(pool, pattern);
  };
  readonly listPolicies: StorePolicies["listPolicies"] = async (pool) => {
    await this.layout.check(pool);
    return this.on(pool, this.policies).listPolicies(pool);
  };
  readonly domainPacing: StorePolicies["domainPacing"] = (pool, domainKeys, limit) =>
    this.on(pool, this.policies).domainPacing(pool, domainKeys, limit);

  // The leader lease is no pool's.
  readonly campaign: StoreLeader["campaign"] = (name, owner, ttlMs) => this.inner.campaign(name, owner, ttlMs);
  readonly resign: StoreLeader["resign"] = (name, owner) => this.inner.resign(name, owner);

  // Events (the audit trail is no pool's).
  readonly appendEvent: StoreEvents["appendEvent"] = (pool, event) => this.events.appendEvent(pool, event);
  readonly readEvents: StoreEvents["readEvents"] = (pool, after, opts) => this.on(pool, this.events).readEvents(pool, after, opts);
  readonly appendAudit: StoreEvents["appendAudit"] = (entry) => this.inner.appendAudit(entry);
  readonly listAudit: StoreEvents["listAudit"] = (limit) => this.inner.listAudit(limit);

  // Sources are the pool's, kept in the inner store under the pool's own name (not a shard's).
  readonly putSource: StoreSources["putSource"] = (source) => this.inner.putSource(source);
  readonly listSources: StoreSources["listSources"] = (pool) => this.inner.listSources(pool);
  readonly removeSource: StoreSources["removeSource"] = (pool, id) => this.inner.removeSource(pool, id);
  readonly putSourceStatus: StoreSources["putSourceStatus"] = (pool, id, status) => this.inner.putSourceStatus(pool, id, status);
  readonly sourceMembers: StoreSources["sourceMembers"] = (pool, id) => this.inner.sourceMembers(pool, id);
  readonly sourceMemberCount: StoreSources["sourceMemberCount"] = (pool, id) => this.inner.sourceMemberCount(pool, id);
  readonly setSourceMembers: StoreSources["setSourceMembers"] = (pool, id, ids) => this.inner.setSourceMembers(pool, id, ids);

  // Recovery: one epoch and hold per shard (shard-recovery.ts); the server is the inner store's.
  readonly ensureEpoch: StoreRecovery["ensureEpoch"] = (pool, request) => this.on(pool, this.recovery).ensureEpoch(pool, request);
  readonly holdState: StoreRecovery["holdState"] = (pool) => this.on(pool, this.recovery).holdState(pool);
  readonly server: StoreRecovery["server"] = () => this.inner.server();

  ping(): Promise<boolean> {
    return this.inner.ping();
  }

  onReconnect(listener: () => void): void {
    this.inner.onReconnect?.(listener);
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
