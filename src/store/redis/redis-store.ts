/**
 * The Redis `LeaseStore`: one Lua script step per operation (G5; the lease operations of one
 * event-loop turn share one call, see lease-batch.ts), every key of a pool under the
 * hash tag `{pool}` (Redis Cluster ready), any broker replica can renew or release any lease
 * (the lease id names its keys). Semantics: docs/store-semantics.md.
 */
import type { Cluster, Redis } from "ioredis";
import type {
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
} from "@proxybroker/sdk/model";
import type { ScoringConfig } from "@proxybroker/sdk/model";
import { POLICY_HISTORY_MS, type LeaseStore } from "@proxybroker/sdk/engine";
import * as admin from "./admin.js";
import * as policies from "./policies.js";
import * as events from "./events.js";
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
import { asArray, decodeAcquire, decodeRelease, decodeRenew, num, str, type AcquireContext } from "./replies.js";
import { ScriptReplyError } from "./errors.js";
import { ScriptRunner, type ScriptArg, type ScriptKeys } from "./scripts.js";
import { LeaseBatcher } from "./lease-batch.js";
import { WorkerMarks } from "./worker-marks.js";
import { randomBytes } from "node:crypto";
import { RedisReleaseFeed } from "./release-feed.js";
import type { Campaign, ReleaseFeed } from "@proxybroker/sdk/engine";
import { masters } from "./nodes.js";
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
    const aArgs = acquireArgs(keys, params, hex, env.seed(), record);
    const labels = labelArgs(params);
    const reply = await this.batcher
      .submit(params.pool, {
        code: "A",
        keys: aKeys,
        args: labels.length === 0 ? aArgs : [...aArgs, ...labels],
        now: env.now(),
        alone: (now) => env.runner.run("acquireLease", aKeys, [...aArgs, now, ...labels]),
      })
      .catch((err: unknown) => this.unmarked(record, params, err));
    const result = decodeAcquire(asArray(reply), 0, acquireContext(params, hex));
    if (record && result.kind === "stale-policy") this.marks.undo(params);
    return result;
  }

  /**
   * An acquire that was to record its worker failed: forget the mark (as after a stale-policy
   * answer, which records nothing either), and fail with `err`.
   */
  private unmarked(recorded: boolean, p: AcquireParams, err: unknown): never {
    if (recorded) this.marks.undo(p);
    throw err;
  }

  async renew(params: RenewParams): Promise<RenewResult> {
    const lease = decodeLeaseId(params.leaseId);
    if (lease === undefined) return { kind: "lost", reason: "NOT_FOUND" };
    const keys = this.env.keys.pool(lease.pool);
    const reply = await this.env.runner.run(
      "renewLease",
      [keys.lease(lease.hex), keys.pair(lease.domainKey, lease.proxyId), keys.busy(lease.domainKey), keys.workers, keys.reserved],
      [
        keys.base,
        lease.hex,
        lease.domainKey,
        lease.proxyId,
        tokenArg(params.fencingToken),
        Number.isFinite(params.ttlMs) && params.ttlMs > 0 ? Math.floor(params.ttlMs) : 0,
        this.env.now(),
        params.workerId ?? "",
        Math.floor(params.liveSince ?? 0),
      ],
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
    const aArgs = acquireArgs(keys, next, hex, env.seed(), record);
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
      .catch((err: unknown) => this.unmarked(record, next, err));
    const result = decodeRelease(reply, acquireContext(next, hex));
    if (record && result.next?.kind === "stale-policy") this.marks.undo(next);
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

  recordHealth(pool: string, id: string, result: HealthResult, term = 0): Promise<ProxyView | undefined> {
    return admin.recordHealth(this.env, pool, id, result, term);
  }

  async campaign(name: string, owner: string, ttlMs: number): Promise<Campaign> {
    const a = asArray(await this.env.runner.run("campaign", leaderKeys(this.env, name), [owner, Math.max(1, Math.floor(ttlMs)), "c", this.env.now()]));
    return { leader: num(a, 0) === 1, term: num(a, 1), holder: str(a, 2), remainingMs: num(a, 3) };
  }

  async resign(name: string, owner: string): Promise<void> {
    await this.env.runner.run("campaign", leaderKeys(this.env, name), [owner, 1, "r", this.env.now()]);
  }

  poolStats(pool: string, liveSinceMs: number): Promise<PoolStats> {
    return admin.poolStats(this.env, pool, liveSinceMs);
  }

  async reserve(pool: string, reserved: Readonly<Record<string, string>>): Promise<void> {
    const keys = this.env.keys.pool(pool);
    await this.env.runner.run("reserve", [keys.reserved], Object.entries(reserved).flat());
  }

  async touchWorker(pool: string, workerId: string): Promise<void> {
    const keys = this.env.keys.pool(pool);
    await this.env.runner.run("touchWorker", [keys.workers, keys.fallbackWorkers], [workerId, this.env.now()]);
  }

  async rememberWorkers(pool: string, workers: readonly WorkerSeen[]): Promise<void> {
    const keys = this.env.keys.pool(pool);
    // in chunks: one bounded script call each
    for (let i = 0; i < workers.length; i += 500) {
      const args: ScriptArg[] = [this.env.now()];
      for (const w of workers.slice(i, i + 500)) args.push(w.workerId, Math.floor(w.lastSeenAt), Math.floor(w.fallbackPoolAt));
      await this.env.runner.run("rememberWorkers", [keys.workers, keys.fallbackWorkers], args);
    }
  }

  async forgetWorker(pool: string, workerId: string): Promise<boolean> {
    this.marks.forget(pool, workerId);
    const keys = this.env.keys.pool(pool);
    return (await this.env.runner.call((c) => c.zrem(keys.workers, workerId))) === 1;
  }

  liveWorkers(pool: string, sinceMs: number): Promise<WorkerSeen[]> {
    return admin.liveWorkers(this.env, pool, sinceMs);
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

  async domainPacing(pool: string, domainKeys: readonly string[], limit: number): Promise<DomainPacing[]> {
    const keys = this.env.keys.pool(pool);
    const a = asArray(await this.env.runner.run("domainPacing", [keys.adapted], [keys.base, limit, ...domainKeys]));
    const out: DomainPacing[] = [];
    for (let i = 0; i + 4 < a.length; i += 5) {
      out.push({ domainKey: str(a, i), adaptiveMs: num(a, i + 1), learnedMs: num(a, i + 2), learnedAt: num(a, i + 3), loweredAt: num(a, i + 4) });
    }
    return out;
  }

  /**
   * The number of shards `pool` is stored in, recorded on first use by a caller with `shards` > 1
   * (shardLayout-2.lua); -1 when such a caller finds the pool's proxies stored unsharded.
   */
  async shardLayout(pool: string, shards: number): Promise<number> {
    const keys = this.env.keys.pool(pool);
    return num([await this.env.runner.run("shardLayout", [keys.meta, keys.all], [shards])], 0);
  }

  /**
   * `addProxies` into `pool`, a pool's shard 0, checking and recording its shard layout in the
   * same step (addProxies-3.lua): `layout` as `shardLayout` would answer it; when it is not
   * `shards`, nothing was added.
   */
  addProxiesInLayout(pool: string, specs: readonly ProxySpecInput[], shards: number): Promise<{ layout: number; added: string[]; updated: string[] }> {
    return admin.addProxiesInLayout(this.env, pool, specs, shards).then((r) => ({ ...r, layout: r.layout ?? shards }));
  }

  /**
   * Raise the adaptive pacing of `pacing.domainKey` in `pool` to `pacing` where it is higher (never
   * lowers): how a sharded pool spreads what one shard learned of a site to its other shards.
   */
  async raisePacing(pool: string, pacing: DomainPacing): Promise<void> {
    const keys = this.env.keys.pool(pool);
    await this.env.runner.run("raisePacing", [keys.pacing(pacing.domainKey), keys.adapted], [
      pacing.domainKey,
      Math.max(0, Math.floor(pacing.adaptiveMs)),
      Math.max(0, Math.floor(pacing.learnedMs)),
      Math.max(0, Math.floor(pacing.learnedAt)),
      this.env.now(),
    ]);
  }

  async ensureEpoch(pool: string, request: EpochRequest): Promise<EpochState> {
    const keys = this.env.keys.pool(pool);
    const a = asArray(
      await this.env.runner.run("ensureEpoch", [keys.meta], [request.expected, Math.max(0, Math.floor(request.holdMs)), request.lost ? 1 : 0, this.env.now()]),
    );
    return { epoch: str(a, 0), grantsFrom: num(a, 1) };
  }

  /**
   * Redis's `run_id`: a restarted server (or another one after a failover) has a new one. On a
   * Cluster, the run_ids of all masters: a failover of any of them changes it (the broker then
   * holds grants in every pool, not knowing which pools lived there).
   */
  async serverId(): Promise<string> {
    const ids = await this.env.runner.call(async (c) => {
      const nodes = masters(c);
      if (nodes.length === 0) throw new ScriptReplyError("the cluster client knows no master yet");
      return Promise.all(nodes.map(async (n) => /^run_id:(\w+)/m.exec(await n.info("server"))?.[1]));
    });
    if (ids.some((id) => id === undefined)) throw new ScriptReplyError("INFO server has no run_id");
    return ids.sort().join(",");
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

  readEvents(pool: string, after: string, opts: { readonly count: number; readonly blockMs: number }): Promise<{ events: PoolEvent[]; cursor: string }> {
    this.blocking ??= new events.BlockingReads(this.client);
    return this.blocking.readEvents(this.env, pool, after, opts);
  }

  appendAudit(entry: NewAuditEntry): Promise<void> {
    return events.appendAudit(this.env, entry);
  }

  listAudit(limit: number): Promise<AuditEntry[]> {
    return events.listAudit(this.env, limit);
  }

  async proxyAction(pool: string, ids: readonly string[], action: ProxyAction): Promise<ProxyActionResult> {
    const keys = this.env.keys.pool(pool);
    const code = { disable: "D", enable: "E", ban: "B", unban: "U" }[action.kind];
    const dk = action.kind === "ban" || action.kind === "unban" ? action.domainKey : "";
    const ttl = action.kind === "ban" ? Math.max(1, Math.floor(action.ttlMs)) : 0;
    const result: ProxyActionResult = { changed: [], unchanged: [], notFound: [] };
    if (ids.length === 0) return result;
    const reply = asArray(await this.env.runner.run("proxyAction", [keys.index, keys.quarantine, keys.meta], [keys.base, code, dk, ttl, this.env.now(), ...ids]));
    ids.forEach((id, i) => {
      const r = num(reply, i);
      (r === 1 ? result.changed : r === 0 ? result.unchanged : result.notFound).push(id);
    });
    return result;
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

/** The keys of leader lease `name`: its holder and its last term, under one hash tag. */
function leaderKeys(env: StoreEnv, name: string): [string, string] {
  const p = env.keys.prefix.endsWith(":") ? env.keys.prefix : `${env.keys.prefix}:`;
  return [`${p}{leader}:${name}`, `${p}{leader}:${name}:t`];
}
