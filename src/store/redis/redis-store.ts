/**
 * The Redis `LeaseStore`: one Lua script step per operation (G5; the lease operations of one
 * event-loop turn share one call, see lease-batch.ts), every key of a pool under the
 * hash tag `{pool}` (Redis Cluster ready), any broker replica can renew or release any lease
 * (the lease id names its keys). Semantics: docs/store-semantics.md.
 */
import type { Cluster, Redis } from "ioredis";
import type {
  DomainUse,
  HoldState,
  Reservations,
  StoreServer,
  AcquireParams,
  AcquireResult,
  DomainPacing,
  EpochRequest,
  EpochState,
  DomainPolicySpec,
  HealthResult,
  OutcomeReport,
  PolicySet,
  PoolStats,
  ProxyAction,
  ProxyActionResult,
  PoolEvent,
  NewPoolEvent,
  AuditEntry,
  NewAuditEntry,
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
import type { ScoringConfig } from "@proxybroker/sdk/model";
import { POLICY_HISTORY_MS, type LeaseStore } from "@proxybroker/sdk/engine";
import * as admin from "./admin.js";
import type { HealthCheckRecord } from "./admin.js";
import * as exitMarks from "./exit-marks.js";
import * as policies from "./policies.js";
import * as events from "./events.js";
import * as lately from "./lately.js";
import * as leader from "./leader.js";
import * as pacing from "./pacing.js";
import * as workers from "./workers.js";
import * as sources from "./sources.js";
import type { SourceSpec, SourceStatus, SourceView } from "@proxybroker/sdk/model";
import { serverState } from "./server-state.js";
import {
  acquireArgs,
  acquireKeys,
  labelArgs,
  releaseArgs,
  releaseKeys,
  REPORT_CHUNK,
  reportArgs,
  reportKeys,
  scriptConstants,
  tokenArg,
} from "./args.js";
import { DEFAULT_PREFIX, KeyBuilder } from "./keys.js";
import { decodeLeaseId, newLeaseHex } from "./lease-id.js";
import { asArray, decodeAcquire, decodeRelease, decodeRenew, num, type AcquireContext } from "./replies.js";
import { ScriptRunner, type ScriptKeys } from "./scripts.js";
import { argv } from "./script-args.js";
import { keyv } from "./script-keys.js";
import { LeaseBatcher } from "./lease-batch.js";
import { WorkerMarks } from "./worker-marks.js";
import { randomBytes } from "node:crypto";
import { RedisReleaseFeed } from "./release-feed.js";
import type { Campaign, ReleaseFeed } from "@proxybroker/sdk/engine";
import type { StoreEnv } from "./store-env.js";

/** Options of a `RedisStore`. */
export interface RedisStoreOptions {
  /** A client from `createRedisClient` (or a Cluster); the store never closes it except in `close()`. */
  readonly client: Redis | Cluster;
  /** The numbers of SPEC §2; they are baked into the scripts' text (one SHA per config). */
  readonly scoring: ScoringConfig;
  /** Epoch ms. When unset the scripts read Redis TIME: one clock for every broker replica. */
  readonly clock?: () => number;
  /** Uniform in [0, 1): seeds the scripts' selection and draws quarantine jitter. Default `Math.random`. */
  readonly random?: () => number;
  /** First part of every key name. Default "pb". */
  readonly prefix?: string;
  /** How long a call waits for the client's first connection. Default 2000 ms. */
  readonly readyTimeoutMs?: number;
  /** How long a replaced policy set is kept (`PolicySet.history`). Default 2 h. */
  readonly policyHistoryMs?: number;
  /**
   * Lease operations (acquires, releases) of one pool that reach the store in one turn of the
   * event loop go to Redis as one script call, this many at most. 1 = one call each. Default 32.
   */
  readonly maxBatch?: number;
  /**
   * An acquire records its worker as seen only when this store has not done so within this many
   * ms (worker-marks.ts). Default 0: every acquire records it.
   */
  readonly workerRefreshMs?: number;
}

/** The Redis `LeaseStore`; see the module comment. */
/** A renewal whose domain-key's isolation group is not known: the group of the lease's grant. */
const GROUP_OF_GRANT = { group: "-", affinityMs: 0 };

export class RedisStore implements LeaseStore {
  private readonly client: Redis | Cluster;
  private readonly env: StoreEnv;
  /** This store's instance id: the payload of its release announcements (its own are ignored). */
  private readonly instance = randomBytes(8).toString("hex");
  private feed: RedisReleaseFeed | undefined;
  private blocking: events.BlockingReads | undefined;
  private readonly batcher: LeaseBatcher;
  private readonly marks: WorkerMarks;

  constructor(options: RedisStoreOptions) {
    this.client = options.client;
    const clock = options.clock;
    const random = options.random ?? Math.random;
    this.env = {
      runner: new ScriptRunner(options.client, options.readyTimeoutMs ?? 2_000, scriptConstants(options.scoring)),
      keys: new KeyBuilder(options.prefix ?? DEFAULT_PREFIX),
      scoring: options.scoring,
      now: clock === undefined ? () => "" : () => String(Math.floor(clock())),
      seed: () => Math.floor(random() * 2_147_483_647),
      random,
      policyHistoryMs: options.policyHistoryMs ?? POLICY_HISTORY_MS,
    };
    this.marks = new WorkerMarks(options.workerRefreshMs ?? 0, clock ?? Date.now);
    this.batcher = new LeaseBatcher({ runner: this.env.runner, ...(options.maxBatch === undefined ? {} : { maxBatch: options.maxBatch }) });
  }

  async acquire(params: AcquireParams): Promise<AcquireResult> {
    const { env } = this;
    const keys = env.keys.pool(params.pool);
    const hex = newLeaseHex();
    const aKeys = acquireKeys(keys, params);
    const record = this.marks.due(params);
    const recordUse = this.usesDomain(params);
    const aArgs = acquireArgs(keys, params, { hex, seed: env.seed() }, { worker: record, domainUse: recordUse });
    const labels = labelArgs(params);
    const reply = await this.batcher
      .submit(params.pool, {
        code: "A",
        keys: aKeys,
        args: labels.length === 0 ? aArgs : [...aArgs, ...labels],
        now: env.now(),
        alone: (now) => env.runner.run("acquireLease", aKeys, [...aArgs, now, ...labels]),
      })
      .catch((err: unknown) => this.unmarked({ worker: record, domainUse: recordUse }, params, err));
    const result = decodeAcquire(asArray(reply), 0, acquireContext(params, hex));
    if (result.kind === "stale-policy") this.unmark({ worker: record, domainUse: recordUse }, params);
    return result;
  }

  /** Whether this acquire records its worker's use of the domain-key (asked for, and not recorded moments ago). */
  private usesDomain(p: AcquireParams): boolean {
    return p.domainUseMs !== undefined && p.domainUseMs > 0 && this.marks.dueUse(p);
  }

  /** An acquire that was to record its worker (or its use) recorded nothing: forget the marks. */
  private unmark(recorded: { readonly worker: boolean; readonly domainUse: boolean }, p: AcquireParams): void {
    if (recorded.worker) this.marks.undo(p);
    if (recorded.domainUse) this.marks.undoUse(p);
  }

  /**
   * An acquire that was to record its worker failed: forget the marks (as after a stale-policy
   * answer, which records nothing either), and fail with `err`.
   */
  private unmarked(recorded: { readonly worker: boolean; readonly domainUse: boolean }, p: AcquireParams, err: unknown): never {
    this.unmark(recorded, p);
    throw err;
  }

  async renew(params: RenewParams): Promise<RenewResult> {
    const lease = decodeLeaseId(params.leaseId);
    if (lease === undefined) return { kind: "lost", reason: "NOT_FOUND" };
    const keys = this.env.keys.pool(lease.pool);
    const isolation = params.isolationOf?.(lease.pool, lease.domainKey) ?? GROUP_OF_GRANT;
    const reply = await this.env.runner.run(
      "renewLease",
      keyv("renewKeys", {
        lease: keys.lease(lease.hex),
        pair: keys.pair(lease.domainKey, lease.proxyId),
        busy: keys.busy(lease.domainKey),
        workers: keys.workers,
        reserved: keys.reserved,
        meta: keys.meta,
      }),
      argv("renew", {
        base: keys.base,
        hex: lease.hex,
        domainKey: lease.domainKey,
        proxyId: lease.proxyId,
        token: tokenArg(params.fencingToken),
        ttlMs: Number.isFinite(params.ttlMs) && params.ttlMs > 0 ? Math.floor(params.ttlMs) : 0,
        now: this.env.now(),
        workerId: params.workerId ?? "",
        liveSince: Math.floor(params.liveSince ?? 0),
        isolationGroup: isolation.group,
        affinityMs: Math.floor(isolation.affinityMs),
        honorsTtl: params.honorsTtl === true ? "1" : "0",
      }),
    );
    return decodeRenew(reply);
  }

  async release(params: ReleaseParams): Promise<ReleaseResult> {
    const { env } = this;
    const lease = decodeLeaseId(params.leaseId);
    const next = params.next;
    if (lease === undefined) {
      if (next === undefined) return { kind: "lost", reason: "NOT_FOUND" };
      return { kind: "lost", reason: "NOT_FOUND", next: await this.acquire(next) };
    }
    const keys = env.keys.pool(lease.pool);
    const rKeys = releaseKeys(keys, lease);
    const rArgs = releaseArgs(keys, lease, params.fencingToken, params.outcome, env.random(), this.instance);
    const releaseOnly = (): Promise<unknown> =>
      this.batcher.submit(lease.pool, {
        code: "R",
        keys: rKeys,
        args: rArgs,
        now: env.now(),
        alone: (now) => env.runner.run("releaseLease", rKeys, [...rArgs, now]),
      });
    if (next === undefined) return decodeRelease(await releaseOnly());
    if (next.pool !== lease.pool) {
      // Another pool lives in another hash slot: two steps, release first.
      const released = decodeRelease(await releaseOnly());
      return { ...released, next: await this.acquire(next) };
    }
    const hex = newLeaseHex();
    const aKeys = acquireKeys(keys, next);
    const record = this.marks.due(next);
    const recordUse = this.usesDomain(next);
    const aArgs = acquireArgs(keys, next, { hex, seed: env.seed() }, { worker: record, domainUse: recordUse });
    const labels = labelArgs(next);
    const bothKeys: ScriptKeys<"releaseAndAcquire"> = [...aKeys, ...rKeys];
    const reply = await this.batcher
      .submit(lease.pool, {
        code: "N",
        keys: bothKeys,
        args: [...rArgs, ...aArgs, ...labels],
        now: env.now(),
        // alone, the acquire comes first: releaseAndAcquire reads its part of KEYS and ARGV in place
        alone: (now) => env.runner.run("releaseAndAcquire", bothKeys, [...aArgs, now, ...rArgs, ...labels]),
      })
      .catch((err: unknown) => this.unmarked({ worker: record, domainUse: recordUse }, next, err));
    const result = decodeRelease(reply, acquireContext(next, hex));
    if (result.next?.kind === "stale-policy") this.unmark({ worker: record, domainUse: recordUse }, next);
    return result;
  }

  /** One script call per chunk of `REPORT_CHUNK` reports; each chunk is atomic, the batch is not. */
  async reportOutcomes(pool: string, reports: readonly OutcomeReport[]): Promise<number> {
    const { env } = this;
    const keys = env.keys.pool(pool);
    let applied = 0;
    for (let i = 0; i < reports.length; i += REPORT_CHUNK) {
      const chunk = reports.slice(i, i + REPORT_CHUNK);
      const reply = await env.runner.run("reportOutcomes", reportKeys(keys), reportArgs(keys, chunk, env.now(), env.random));
      applied += num(asArray(reply), 0);
    }
    return applied;
  }

  addProxies(pool: string, specs: readonly ProxySpecInput[]): Promise<{ added: string[]; updated: string[] }> {
    return admin.addProxies(this.env, pool, specs);
  }

  removeProxies(pool: string, ids: readonly string[]): Promise<{ removed: string[]; notFound: string[] }> {
    return admin.removeProxies(this.env, pool, ids);
  }

  restoreProxies(pool: string, ids: readonly string[]): Promise<{ restored: string[]; notFound: string[] }> {
    return admin.restoreProxies(this.env, pool, ids);
  }

  listProxies(pool: string, page: { size: number; after: string }): Promise<{ proxies: ProxyView[]; next: string }> {
    return admin.listProxies(this.env, pool, page);
  }

  recordHealth(pool: string, id: string, result: HealthResult, term = 0, exitIp = ""): Promise<ProxyView | undefined> {
    return admin.recordHealth(this.env, { pool, auditPool: pool }, { id, result, term, exitIp });
  }

  /** The members of exit `exitIp` in store pool `pool` (a shard) now. */
  exitMembers(pool: string, exitIp: string): Promise<string[]> {
    return exitMarks.exitMembers(this.env, pool, exitIp);
  }

  /** The ids of host `host`'s proxies in store pool `pool` (a shard). */
  hostMembers(pool: string, host: string): Promise<string[]> {
    return exitMarks.hostMembers(this.env, pool, host);
  }

  /** Mark proxies of store pool `pool` (a shard) as sharing their host with proxies of other shards. */
  markSharesHost(pool: string, ids: readonly string[]): Promise<void> {
    return exitMarks.markSharesHost(this.env, pool, ids);
  }

  /** Whether proxy `id` of store pool `pool` (a shard) is marked as sharing its exit with a lower shard. */
  exitConflicted(pool: string, id: string): Promise<boolean> {
    return exitMarks.exitConflicted(this.env, pool, id);
  }

  /** Mark or unmark proxies of store pool `pool` (a shard) as sharing their exit with a lower shard. */
  markExitConflict(pool: string, ids: readonly string[], on: boolean): Promise<void> {
    return exitMarks.markExitConflict(this.env, pool, ids, on);
  }

  /** `recordHealth` in store pool `pool` (a shard), its exit changes audited as pool `auditPool`'s. */
  recordHealthIn(pools: { pool: string; auditPool: string }, check: HealthCheckRecord): Promise<ProxyView | undefined> {
    return admin.recordHealth(this.env, pools, check);
  }

  campaign(name: string, owner: string, ttlMs: number): Promise<Campaign> {
    return leader.campaign(this.env, name, owner, ttlMs);
  }

  resign(name: string, owner: string): Promise<void> {
    return leader.resign(this.env, name, owner);
  }

  poolStats(pool: string, liveSinceMs: number): Promise<PoolStats> {
    return admin.poolStats(this.env, pool, liveSinceMs);
  }

  reserve(pool: string, reserved: Reservations): Promise<void> {
    return lately.reserve(this.env, pool, reserved);
  }

  domainUses(pool: string, sinceMs: number): Promise<DomainUse[]> {
    return lately.domainUses(this.env, pool, sinceMs);
  }

  rememberDomainUses(pool: string, uses: readonly DomainUse[]): Promise<void> {
    return lately.rememberDomainUses(this.env, pool, uses);
  }

  touchWorker(pool: string, workerId: string, touch: WorkerTouch = {}): Promise<void> {
    return workers.touchWorker(this.env, pool, workerId, touch);
  }

  rememberWorkers(pool: string, seen: readonly WorkerSeen[]): Promise<void> {
    return workers.rememberWorkers(this.env, pool, seen);
  }

  hearWorker(pool: string, workerId: string, heard: WorkerHeard): Promise<void> {
    return workers.hearWorker(this.env, pool, workerId, heard);
  }

  async forgetWorker(pool: string, workerId: string): Promise<boolean> {
    this.marks.forget(pool, workerId);
    return workers.forgetWorker(this.env, pool, workerId);
  }

  liveWorkers(pool: string, sinceMs: number, opts: { readonly claims?: boolean } = {}): Promise<WorkerSeen[]> {
    return admin.liveWorkers(this.env, pool, sinceMs, opts.claims === true);
  }

  setPolicy(pool: string, policy: DomainPolicySpec): Promise<void> {
    return policies.setPolicy(this.env, pool, policy);
  }

  deletePolicy(pool: string, pattern: string): Promise<boolean> {
    return policies.deletePolicy(this.env, pool, pattern);
  }

  listPolicies(pool: string): Promise<PolicySet> {
    return policies.listPolicies(this.env, pool);
  }

  domainPacing(pool: string, domainKeys: readonly string[], limit: number): Promise<DomainPacing[]> {
    return pacing.domainPacing(this.env, pool, domainKeys, limit);
  }

  /**
   * The number of shards `pool` is stored in, recorded on first use by a caller with `shards` > 1
   * (shardLayout-2.lua); -1 when such a caller finds the pool's proxies stored unsharded.
   */
  async shardLayout(pool: string, shards: number): Promise<number> {
    const keys = this.env.keys.pool(pool);
    return num(
      [
        await this.env.runner.run(
          "shardLayout",
          keyv("shardLayoutKeys", { meta: keys.meta, all: keys.all }),
          argv("shardLayout", { shards }),
        ),
      ],
      0,
    );
  }

  /**
   * `addProxies` into `pool`, a pool's shard 0, checking and recording its shard layout in the
   * same step (addProxies-3.lua): `layout` as `shardLayout` would answer it; when it is not
   * `shards`, nothing was added.
   */
  addProxiesInLayout(
    pool: string,
    specs: readonly ProxySpecInput[],
    shards: number,
  ): Promise<{ layout: number; added: string[]; updated: string[] }> {
    return admin.addProxiesInLayout(this.env, pool, specs, shards).then((r) => ({ ...r, layout: r.layout ?? shards }));
  }

  /**
   * Raise the adaptive pacing of `pacing.domainKey` in `pool` to `pacing` where it is higher (never
   * lowers): how a sharded pool spreads what one shard learned of a site to its other shards.
   */
  raisePacing(pool: string, raised: DomainPacing): Promise<void> {
    return pacing.raisePacing(this.env, pool, raised);
  }

  ensureEpoch(pool: string, request: EpochRequest): Promise<EpochState> {
    return lately.ensureEpoch(this.env, pool, request);
  }

  holdState(pool: string): Promise<HoldState> {
    return lately.holdState(this.env, pool);
  }

  /**
   * The masters' `run_id`s (a restart or a failover of any of them changes it) and whether every
   * one of them keeps what it acknowledged through a restart (server-state.ts).
   */
  server(): Promise<StoreServer> {
    return this.env.runner.call((c) => serverState(c));
  }

  /** Each 'ready' of the client after its first: a connection made again, maybe to a restarted server. */
  onReconnect(listener: () => void): void {
    let first = this.client.status === "ready";
    this.client.on("ready", () => {
      if (first) listener();
      first = true;
    });
  }

  /** PING answered with PONG; false on any failure (never throws). */
  async ping(): Promise<boolean> {
    try {
      return (await this.client.ping()) === "PONG";
    } catch {
      return false;
    }
  }

  appendEvent(pool: string, event: NewPoolEvent): Promise<void> {
    return events.appendEvent(this.env, pool, event);
  }

  readEvents(
    pool: string,
    after: string,
    opts: { readonly count: number; readonly blockMs: number },
  ): Promise<{ events: PoolEvent[]; cursor: string }> {
    this.blocking ??= new events.BlockingReads(this.client);
    return this.blocking.readEvents(this.env, pool, after, opts);
  }

  putSource(source: SourceSpec): Promise<void> {
    return sources.putSource(this.env, source);
  }

  listSources(pool: string): Promise<SourceView[]> {
    return sources.listSources(this.env, pool);
  }

  removeSource(pool: string, id: string): Promise<boolean> {
    return sources.removeSource(this.env, pool, id);
  }

  putSourceStatus(pool: string, id: string, status: SourceStatus): Promise<void> {
    return sources.putSourceStatus(this.env, pool, id, status);
  }

  sourceMembers(pool: string, id: string): Promise<string[]> {
    return sources.sourceMembers(this.env, pool, id);
  }

  sourceMemberCount(pool: string, id: string): Promise<number> {
    return sources.sourceMemberCount(this.env, pool, id);
  }

  setSourceMembers(pool: string, id: string, ids: readonly string[]): Promise<void> {
    return sources.setSourceMembers(this.env, pool, id, ids);
  }

  appendAudit(entry: NewAuditEntry): Promise<void> {
    return events.appendAudit(this.env, entry);
  }

  listAudit(limit: number): Promise<AuditEntry[]> {
    return events.listAudit(this.env, limit);
  }

  proxyAction(pool: string, ids: readonly string[], action: ProxyAction): Promise<ProxyActionResult> {
    return admin.proxyAction(this.env, pool, ids, action);
  }

  /**
   * Releases announced by other stores (other broker replicas) on the domain-keys watched: the
   * feed opens its own subscriber connection on first use.
   */
  releaseFeed(): ReleaseFeed {
    this.feed ??= new RedisReleaseFeed({ client: this.client, keys: this.env.keys, self: this.instance });
    return this.feed;
  }

  /** Quit the client (disconnect at once when QUIT cannot be sent). */
  async close(): Promise<void> {
    await this.feed?.close();
    await this.blocking?.close();
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}

function acquireContext(p: AcquireParams, hex: string): AcquireContext {
  return { pool: p.pool, domainKey: p.domainKey, sessionKey: p.sessionKey, hex };
}
