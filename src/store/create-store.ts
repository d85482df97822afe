import type { ScoringConfig } from "@proxybroker/sdk/model";
import { MemoryStore } from "@proxybroker/sdk/engine";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import { RedisStore, createRedisClient, createRedisCluster, type RedisClient } from "./redis/index.js";
import { ShardedStore } from "./sharded/sharded-store.js";
import { ShardMap, type ShardCounts } from "./sharded/shard-map.js";

/** Which store to run on: a Redis Cluster or one Redis when given, else the embedded in-process engine. */
export interface StoreChoice {
  readonly redisUrl: string;
  /** A Redis Cluster's startup nodes (`host:port`), used instead of `redisUrl` when given. */
  readonly redisClusterNodes: readonly string[];
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

/** Create the store the settings ask for. */
export function createStore(choice: StoreChoice, log?: (what: string, err: unknown) => void): CreatedStore {
  const policyHistoryMs = 2 * choice.ttlMaxMs;
  const cluster = choice.redisClusterNodes.length > 0;
  if (choice.redisUrl === "" && !cluster) return { store: new MemoryStore({ scoring: choice.scoring, policyHistoryMs }), kind: "embedded" };
  const client = cluster
    ? createRedisCluster({ nodes: choice.redisClusterNodes, commandTimeoutMs: choice.redisCommandTimeoutMs })
    : createRedisClient({ url: choice.redisUrl, commandTimeoutMs: choice.redisCommandTimeoutMs });
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
