/**
 * Test helper: a real broker (BrokerServer) on a loopback port chosen by the OS, on the embedded
 * store or on a RedisStore, with typed clients over real gRPC.
 */
import * as grpc from "@grpc/grpc-js";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { Health } from "@proxybroker/sdk/gen/grpc/health/v1/health_pb";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import type { ScoringConfig } from "@proxybroker/sdk/model";
import { MemoryStore } from "@proxybroker/sdk/engine";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import { BrokerServer } from "../../src/server/broker-server.js";
import type { ProbeNew } from "../../src/grpc/context.js";
import type { BrokerServerSettings } from "../../src/server/broker-server.js";
import { RedisStore, createRedisClient, createRedisCluster } from "../../src/store/redis/index.js";
import { ShardedStore } from "../../src/store/sharded/sharded-store.js";
import { ShardMap } from "../../src/store/sharded/shard-map.js";
import type { TokenTable } from "../../src/security/tokens.js";

export type StoreKind = "embedded" | "redis" | "cluster";

export interface TestBroker {
  readonly address: string;
  readonly server: BrokerServer;
  readonly store: LeaseStore;
  readonly broker: ClientOf<typeof ProxyBroker>;
  readonly admin: ClientOf<typeof ProxyAdmin>;
  readonly health: ClientOf<typeof Health>;
  stop(): Promise<void>;
}

/** Settings for tests: short TTL bounds so real expiry takes milliseconds. */
export const TEST_SETTINGS: BrokerServerSettings = {
  listenAddress: "127.0.0.1:0",
  adminListenAddress: "",
  tlsCertFile: "",
  tlsKeyFile: "",
  tlsClientCaFile: "",
  ttlDefaultMs: 30_000,
  ttlMinMs: 50,
  ttlMaxMs: 3_600_000,
  maxWaitLimitMs: 60_000,
  waitPollMs: 50,
  keptGiveBackWaitMs: 200,
  sessionTtlMs: 600_000,
  banTtlMs: 3_600_000,
  workerActiveWindowMs: 60_000,
  keepaliveTimeMs: 10_000,
  keepaliveTimeoutMs: 5_000,
  maxRetryAfterMs: 86_400_000,
  maxMessageBytes: 4 * 1024 * 1024,
  maxStreamsPerConnection: 100,
  maxInFlightPerStream: 1_000,
  maxWaitingPerDomain: 10_000,
  maxWaiting: 50_000,
  reportOutcomesPerMinute: 20_000,
  workerAbsentAfterMs: 3_000,
  fallbackWindowMs: 600_000,
  scoring: DEFAULT_SCORING,
};

let prefixes = 0;

/** A Redis key prefix no other test broker uses. */
export function uniquePrefix(): string {
  return `t${process.pid}x${prefixes++}x${Date.now() % 100000}`;
}

/** What `startBroker` takes. */
export interface StartBrokerOptions {
  kind: StoreKind;
  redisUrl?: string;
  /** The Redis client's command timeout (kind "redis"); the client's default (1 s) otherwise. */
  redisCommandTimeoutMs?: number;
  /** `host:port` of the nodes of a Redis Cluster (kind "cluster"). */
  clusterNodes?: readonly string[];
  settings?: Partial<BrokerServerSettings>;
  scoring?: ScoringConfig;
  /** The Redis key prefix; a fresh one by default. Two brokers with one prefix are replicas. */
  prefix?: string;
  /** Bearer tokens the broker checks (none: no authentication). */
  tokens?: TokenTable;
  /** Credentials of the test's own channel (TLS); plaintext by default. */
  credentials?: grpc.ChannelCredentials;
  /** The broker's log (none by default). */
  logger?: Logger;
  /** Shards of every pool (POOL_SHARDS) on a Redis store or cluster; 1 (unsharded) by default. */
  shards?: number;
  /** Pools whose proxies that share a host wait for their first probe (G9); none by default. */
  probeFirstPools?: ReadonlySet<string>;
  /** Told of proxies just added, as the health checker is (none by default). */
  probeNew?: ProbeNew;
}

/** Start a broker on a fresh store; `redisUrl` is required for the Redis store, `clusterNodes` for a cluster. */
export async function startBroker(opts: StartBrokerOptions): Promise<TestBroker> {
  const scoring = opts.scoring ?? DEFAULT_SCORING;
  let store: LeaseStore;
  if (opts.kind === "redis") {
    if (opts.redisUrl === undefined) throw new Error("redisUrl is required for the redis store");
    const client = createRedisClient({
      url: opts.redisUrl,
      ...(opts.redisCommandTimeoutMs === undefined ? {} : { commandTimeoutMs: opts.redisCommandTimeoutMs }),
    });
    store = new RedisStore({ client, scoring, prefix: opts.prefix ?? uniquePrefix() });
  } else if (opts.kind === "cluster") {
    if (opts.clusterNodes === undefined) throw new Error("clusterNodes is required for the cluster store");
    store = new RedisStore({ client: createRedisCluster({ nodes: opts.clusterNodes }), scoring, prefix: opts.prefix ?? uniquePrefix() });
  } else {
    store = new MemoryStore({ scoring });
  }
  if ((opts.shards ?? 1) > 1) {
    if (!(store instanceof RedisStore)) throw new Error("shards need the redis or cluster store");
    store = new ShardedStore({ inner: store, shards: new ShardMap({ all: opts.shards ?? 1, byPool: {} }) });
  }
  const tokens = opts.tokens;
  const server = await BrokerServer.start({
    store,
    settings: { ...TEST_SETTINGS, ...opts.settings },
    ...(opts.probeFirstPools === undefined ? {} : { probeFirstPools: opts.probeFirstPools }),
    ...(opts.probeNew === undefined ? {} : { probeNew: opts.probeNew }),
    ...(tokens === undefined ? {} : { tokens: () => tokens }),
    ...(opts.logger === undefined ? {} : { logger: opts.logger }),
  });
  const address = `127.0.0.1:${server.port}`;
  const channel = new grpc.Client(address, opts.credentials ?? grpc.credentials.createInsecure());
  return {
    address,
    server,
    store,
    broker: createClient(ProxyBroker, channel),
    admin: createClient(ProxyAdmin, channel),
    health: createClient(Health, channel),
    async stop() {
      channel.close();
      await server.shutdown(500);
      await store.close();
    },
  };
}

/** Acquires waiting inside a broker (max_wait), as its `proxybroker_waiting_acquires` metric says. */
export async function waitingAcquires(server: BrokerServer): Promise<number> {
  const text = await server.metrics.registry.getSingleMetricAsString("proxybroker_waiting_acquires");
  return Number(/^proxybroker_waiting_acquires (\d+)$/m.exec(text)?.[1] ?? 0);
}

/**
 * Subscriptions (one per replica's subscriber connection) to the release channels of `domainKey`
 * on a Redis, whatever the key prefix: a replica hears another's releases of a key only once its
 * SSUBSCRIBE is in, which a waiting acquire starts but does not wait for.
 */
export async function releaseSubscribers(redis: Redis, domainKey: string): Promise<number> {
  const channels: unknown = await redis.call("PUBSUB", "SHARDCHANNELS", `*ev:${domainKey}`);
  if (!Array.isArray(channels) || channels.length === 0) return 0;
  const counts: unknown = await redis.call("PUBSUB", "SHARDNUMSUB", ...channels.map(String));
  if (!Array.isArray(counts)) return 0;
  let n = 0;
  for (let i = 1; i < counts.length; i += 2) n += Number(counts[i]);
  return n;
}
