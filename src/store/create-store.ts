import type { ScoringConfig } from "@proxybroker/sdk/model";
import { MemoryStore } from "@proxybroker/sdk/engine";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import {
  RedisStore,
  createRedisClient,
  createRedisCluster,
  createRedisSentinelClient,
  type RedisAuth,
  type RedisClient,
} from "./redis/index.js";
import { ShardedStore } from "./sharded/sharded-store.js";
import { ShardMap, type ShardCounts } from "./sharded/shard-map.js";

/** Which store to run on: a Redis Cluster or one Redis when given, else the embedded in-process engine. */
export interface StoreChoice {
  readonly redisUrl: string;
  /** A Redis Cluster's startup nodes (`host:port`), used instead of `redisUrl` when given. */
  readonly redisClusterNodes: readonly string[];
  /** Sentinels (`host:port`) naming the master `redisSentinelName`, used instead of `redisUrl` when given. */
  readonly redisSentinels: readonly string[];
  readonly redisSentinelName: string;
  /** The Sentinels' AUTH ("" = none). */
  readonly redisSentinelUsername: string;
  readonly redisSentinelPassword: string;
  /** The AUTH of the nodes found through the Sentinels or the Cluster ("" = none). */
  readonly redisUsername: string;
  readonly redisPassword: string;
  readonly redisKeyPrefix: string;
  readonly redisCommandTimeoutMs: number;
  /** Lease operations of one pool per script call at most (1 = one call each). */
  readonly redisBatchMax: number;
  /** Shards per pool (POOL_SHARDS); with none, the Redis store serves every pool itself. */
  readonly poolShards: ShardCounts;
  readonly scoring: ScoringConfig;
  /** A worker silent this long may be in fallback (WORKER_ABSENT_AFTER_MS): last-seen times must lag far less. */
  readonly workerAbsentAfterMs: number;
  /** A worker is live if seen within this window (WORKER_ACTIVE_WINDOW_MS): the same. */
  readonly workerActiveWindowMs: number;
  /** The longest lease TTL: replaced policy sets are kept twice as long. */
  readonly ttlMaxMs: number;
}

/** The store the settings asked for; with Redis, its client too. */
export type CreatedStore =
  | { readonly store: LeaseStore; readonly kind: "embedded" }
  | { readonly store: LeaseStore; readonly kind: "redis"; readonly client: RedisClient };

/**
 * Create the store the settings ask for; `log` hears of failed store calls of the sharded store,
 * `onConnectionError` of every error of a Redis connection (a refused password, a reset).
 */
export function createStore(
  choice: StoreChoice,
  log?: (what: string, err: unknown) => void,
  onConnectionError?: (err: Error) => void,
): CreatedStore {
  const policyHistoryMs = 2 * choice.ttlMaxMs;
  const client = redisClientOf(choice, onConnectionError === undefined ? {} : { onError: onConnectionError });
  if (client === undefined) return { store: new MemoryStore({ scoring: choice.scoring, policyHistoryMs }), kind: "embedded" };
  const redis = new RedisStore({
    client,
    scoring: choice.scoring,
    prefix: choice.redisKeyPrefix,
    policyHistoryMs,
    maxBatch: choice.redisBatchMax,
    // last-seen times lag by at most an eighth of the windows that judge them, and 1 s
    workerRefreshMs: Math.min(1_000, Math.floor(Math.min(choice.workerAbsentAfterMs, choice.workerActiveWindowMs) / 8)),
  });
  // always through the sharded store, unsharded pools too: it refuses a pool stored in another
  // shard layout than POOL_SHARDS says (src/store/sharded/layout.ts)
  const store = new ShardedStore({ inner: redis, shards: new ShardMap(choice.poolShards), ...(log === undefined ? {} : { onError: log }) });
  return { store, kind: "redis", client };
}

function auth(username: string, password: string): RedisAuth | undefined {
  if (password === "") return undefined;
  return username === "" ? { password } : { username, password };
}

/** The Redis client the choice names (Cluster, Sentinel or one URL); undefined: the embedded store. */
function redisClientOf(choice: StoreChoice, hooks: { readonly onError?: (err: Error) => void }): RedisClient | undefined {
  const common = { commandTimeoutMs: choice.redisCommandTimeoutMs, ...hooks };
  const nodeAuth = auth(choice.redisUsername, choice.redisPassword);
  if (choice.redisClusterNodes.length > 0) {
    return createRedisCluster({ nodes: choice.redisClusterNodes, ...common, ...(nodeAuth === undefined ? {} : { auth: nodeAuth }) });
  }
  if (choice.redisSentinels.length > 0) {
    const sentinelAuth = auth(choice.redisSentinelUsername, choice.redisSentinelPassword);
    return createRedisSentinelClient({
      sentinels: choice.redisSentinels,
      name: choice.redisSentinelName,
      ...common,
      ...(nodeAuth === undefined ? {} : { auth: nodeAuth }),
      ...(sentinelAuth === undefined ? {} : { sentinelAuth }),
    });
  }
  if (choice.redisUrl !== "") return createRedisClient({ url: choice.redisUrl, ...common });
  return undefined;
}
