/**
 * The ioredis client the broker's Redis store runs on, configured to fail fast: no offline
 * queue, no per-request retries, a command timeout; it reconnects by itself forever with a
 * capped backoff.
 */
import { Cluster, Redis } from "ioredis";

/** Options of `createRedisClient`. */
export interface RedisClientOptions {
  /** `redis://[user:pass@]host:port[/db]` (or `rediss://`). */
  readonly url: string;
  /** A command not answered within this time rejects (→ `StoreUnavailableError`). Default 1000. */
  readonly commandTimeoutMs?: number;
  /** Connection attempts give up after this time and are retried. Default 1000. */
  readonly connectTimeoutMs?: number;
  /** Called with connection errors (they are also what a failing command rejects with). */
  readonly onError?: (err: Error) => void;
}

/**
 * How often a client whose Redis is loading its data asks again whether it is done. ioredis
 * would otherwise wait for the server's own loading estimate, which can be seconds longer than
 * the load, and the broker would stay unavailable after Redis was back.
 */
export const LOADING_RECHECK_MS = 100;

/** Longest wait between two reconnection attempts. */
export const MAX_RECONNECT_DELAY_MS = 1_000;

/** Delay before reconnection attempt `times` (1, 2, …): 50 ms doubling, capped at 1 s. */
export function reconnectDelayMs(times: number): number {
  return Math.min(MAX_RECONNECT_DELAY_MS, 50 * 2 ** Math.min(10, Math.max(0, times - 1)));
}

/** A connected (connecting) ioredis client for the store. */
export function createRedisClient(options: RedisClientOptions): Redis {
  const client = new Redis(options.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: options.commandTimeoutMs ?? 1_000,
    connectTimeout: options.connectTimeoutMs ?? 1_000,
    retryStrategy: reconnectDelayMs,
    maxLoadingRetryTime: LOADING_RECHECK_MS,
    lazyConnect: false,
    enableAutoPipelining: false,
  });
  const onError = options.onError;
  // Without a listener an 'error' event would be thrown; failing commands reject on their own.
  client.on("error", (err: Error) => {
    if (onError !== undefined) onError(err);
  });
  return client;
}

/** Username (optional) and password of a server's AUTH. */
export interface RedisAuth {
  readonly username?: string;
  readonly password: string;
}

/** Options of `createRedisCluster`. */
export interface RedisClusterOptions {
  /** Startup nodes, `host:port` each (any of the cluster's nodes; the rest is discovered). */
  readonly nodes: readonly string[];
  /** The nodes' AUTH; none: no auth. */
  readonly auth?: RedisAuth;
  readonly commandTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  readonly onError?: (err: Error) => void;
}

/** Options of `createRedisSentinelClient`. */
export interface RedisSentinelOptions {
  /** The Sentinels, `host:port` each (any that answers names the master). */
  readonly sentinels: readonly string[];
  /** The master's name in the Sentinels' configuration. */
  readonly name: string;
  /** The Sentinels' own AUTH; none: no auth. */
  readonly sentinelAuth?: RedisAuth;
  /** The master's AUTH; none: no auth. */
  readonly auth?: RedisAuth;
  readonly commandTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  readonly onError?: (err: Error) => void;
}

/**
 * A connected (connecting) client of the master the Sentinels name, failing fast like
 * `createRedisClient`. It asks the Sentinels for the master on every (re)connection, checks that
 * the server it reached is a master (a demoted one is left at once), and listens to the
 * Sentinels' `+switch-master` so a failover drops the connection to the old master at once rather
 * than when a command times out. The store sees the new master's `run_id` on the reconnection and
 * holds the pool as after any loss of writes (docs/failures.md).
 */
export function createRedisSentinelClient(options: RedisSentinelOptions): Redis {
  const timeout = options.commandTimeoutMs ?? 1_000;
  const client = new Redis({
    sentinels: parseClusterNodes(options.sentinels.join(",")),
    name: options.name,
    role: "master",
    failoverDetector: true,
    ...(options.sentinelAuth === undefined
      ? {}
      : {
          sentinelPassword: options.sentinelAuth.password,
          ...(options.sentinelAuth.username === undefined ? {} : { sentinelUsername: options.sentinelAuth.username }),
        }),
    ...authOptions(options.auth),
    sentinelRetryStrategy: reconnectDelayMs,
    sentinelCommandTimeout: timeout,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeout,
    connectTimeout: options.connectTimeoutMs ?? 1_000,
    retryStrategy: reconnectDelayMs,
    maxLoadingRetryTime: LOADING_RECHECK_MS,
    lazyConnect: false,
    enableAutoPipelining: false,
  });
  const onError = options.onError;
  client.on("error", (err: Error) => {
    if (onError !== undefined) onError(err);
  });
  return client;
}

function authOptions(auth: RedisAuth | undefined): { password?: string; username?: string } {
  if (auth === undefined) return {};
  return { password: auth.password, ...(auth.username === undefined ? {} : { username: auth.username }) };
}

/** Parse `host:port[,host:port…]` (REDIS_CLUSTER_NODES); throws RangeError naming a bad entry. */
export function parseClusterNodes(text: string): { host: string; port: number }[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map((entry) => {
      const m = /^(.+):(\d{1,5})$/.exec(entry);
      if (m === null || Number(m[2]) > 65535) throw new RangeError(`"${entry}" is not host:port`);
      return { host: m[1]!, port: Number(m[2]) };
    });
}

/**
 * A connected (connecting) ioredis Cluster client for the store, failing fast like
 * `createRedisClient`: no offline queue, no per-request retries, a command timeout per node. It
 * follows MOVED/ASK redirections and refreshes the slot map by itself (after a failover too), and
 * keeps reconnecting with the same capped backoff.
 */
export function createRedisCluster(options: RedisClusterOptions): Cluster {
  const cluster = new Cluster(parseClusterNodes(options.nodes.join(",")), {
    enableOfflineQueue: false,
    enableReadyCheck: true,
    scaleReads: "master",
    maxRedirections: 16,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: options.commandTimeoutMs ?? 1_000,
    slotsRefreshInterval: 5_000,
    clusterRetryStrategy: reconnectDelayMs,
    enableAutoPipelining: false,
    redisOptions: {
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 1_000,
      connectTimeout: options.connectTimeoutMs ?? 1_000,
      maxLoadingRetryTime: LOADING_RECHECK_MS,
      ...authOptions(options.auth),
    },
  });
  const onError = options.onError;
  cluster.on("error", (err: Error) => {
    if (onError !== undefined) onError(err);
  });
  return cluster;
}
