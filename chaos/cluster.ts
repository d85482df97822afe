/**
 * What the chaos run runs on, all real and on loopback: the Redis CHAOS_REDIS names
 * (chaos/redis-topology.ts: one redis-server with AOF in the run's directory, Sentinel, or a
 * Cluster), two broker replicas on it with the same key
 * prefix and proxies file (test/support/broker-process.ts), N tinyproxies each sending from its
 * own 127.0.0.x (test/support/tinyproxies.ts), and S sites on 127.0.1.x (crawl/sites.ts) that
 * log every request with the client IP.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { startSites } from "../crawl/sites.js";
import type { Sites } from "../crawl/sites.js";
import { brokerProcess } from "../test/support/broker-process.js";
import type { BrokerProcess } from "../test/support/broker-process.js";
import { startTinyproxies } from "../test/support/tinyproxies.js";
import type { Tinyproxies } from "../test/support/tinyproxies.js";
import { startChaosGateway } from "./gateway.js";
import type { ChaosGateway } from "./gateway.js";
import type { ChaosOptions } from "./options.js";
import { startChaosRedis } from "./redis-topology.js";
import type { ChaosRedis } from "./redis-topology.js";

/** The key prefix both replicas share. */
export const KEY_PREFIX = "chaos";

/** One broker replica: its process, and admin and broker stubs on its address. */
export interface Replica {
  readonly name: string;
  readonly process: BrokerProcess;
  readonly admin: ClientOf<typeof ProxyAdmin>;
  readonly broker: ClientOf<typeof ProxyBroker>;
}

export interface Cluster {
  readonly redis: ChaosRedis;
  readonly replicas: readonly Replica[];
  /** The gateway in front of both replicas (with gateway workers only). */
  readonly gateway: ChaosGateway | undefined;
  readonly proxies: Tinyproxies;
  readonly sites: Sites;
  /** Proxy ids (`127.0.0.1:port`) as the broker names them. */
  readonly proxyIds: readonly string[];
  /** Client IP a site sees → proxy id. */
  readonly proxyOfIp: ReadonlyMap<string, string>;
  /** Domain-key of every site (its host). */
  readonly domains: readonly string[];
  close(): Promise<void>;
}

/** The broker's settings for the run: the run's TTL as the default (it bounds the hold after a loss of state). */
function brokerEnv(options: ChaosOptions, proxiesFile: string, redis: ChaosRedis): Record<string, string> {
  return {
    ...redis.brokerEnv,
    REDIS_KEY_PREFIX: KEY_PREFIX,
    PROXIES_FILE: proxiesFile,
    LEASE_TTL_DEFAULT_MS: String(options.ttlMs),
    SHUTDOWN_GRACE_MS: "3000",
    ...(options.poolShards === "" ? {} : { POOL_SHARDS: options.poolShards }),
  };
}

export async function startCluster(options: ChaosOptions): Promise<Cluster> {
  const dir = resolve(options.dir);
  const redisDir = join(dir, "redis");
  await mkdir(redisDir, { recursive: true });
  const redis = await startChaosRedis(options, { dir: redisDir, keyPrefix: KEY_PREFIX });
  const sites = await startSites({
    rules: Array.from({ length: options.sites }, () => ({
      // Only the overlap matters here: one request in flight per client IP, no interval rule,
      // and never a ban (a second request in flight is answered 429 and logged).
      minIntervalMs: 0,
      toleranceMs: 0,
      violationsToBan: Number.MAX_SAFE_INTEGER,
      violationWindowMs: 60_000,
      banMs: 0,
      pageDelayMs: options.pageDelayMs,
    })),
  });
  const proxies = await startTinyproxies({ count: options.proxies });
  const proxiesFile = join(dir, "proxies.txt");
  await writeFile(proxiesFile, `${proxies.proxies.map((p) => `http://${p.address}`).join("\n")}\n`);
  const replicas: Replica[] = [];
  const channels: grpc.Client[] = [];
  for (const name of ["A", "B"]) {
    const proc = await brokerProcess({ redisUrl: redis.redisUrl, env: brokerEnv(options, proxiesFile, redis) });
    await proc.start();
    const channel = new grpc.Client(proc.address, grpc.credentials.createInsecure(), {
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1_000,
    });
    channels.push(channel);
    replicas.push({ name, process: proc, admin: createClient(ProxyAdmin, channel), broker: createClient(ProxyBroker, channel) });
  }
  const gateway = options.gatewayWorkers > 0 ? await startChaosGateway(replicas.map((r) => r.process.address)) : undefined;
  return {
    redis,
    replicas,
    gateway,
    proxies,
    sites,
    proxyIds: proxies.proxies.map((p) => p.address),
    proxyOfIp: new Map(proxies.proxies.map((p) => [p.outgoing, p.address])),
    domains: sites.sites.map((s) => new URL(s.origin).hostname),
    async close() {
      for (const c of channels) c.close();
      await gateway?.stop();
      await Promise.allSettled(replicas.map((r) => r.process.stop()));
      await proxies.stop();
      await sites.close();
      await redis.stop();
    },
  };
}
