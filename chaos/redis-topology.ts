/**
 * The Redis a chaos run runs on (CHAOS_REDIS), and the Redis faults it can take:
 *
 * - `single`: one redis-server with AOF in the run's directory; restarts (SHUTDOWN NOSAVE or
 *   SIGKILL, reloading the AOF) and FLUSHALL;
 * - `sentinel`: a master with one replica and three Sentinels (test/support/redis-sentinel.ts),
 *   the brokers on REDIS_SENTINELS; failovers (the master SIGKILLed, the replica promoted, the old
 *   master back as a replica) and FLUSHALL on the master;
 * - `cluster`: a Redis Cluster of three masters with a replica each
 *   (test/support/redis-cluster.ts), the brokers on REDIS_CLUSTER_NODES; failovers of the master
 *   that holds the pool's keys, and FLUSHALL on every master.
 */
import { parseShardCounts } from "../src/config/shard-counts.js";
import { ShardMap } from "../src/store/sharded/shard-map.js";
import { startRedisCluster } from "../test/support/redis-cluster.js";
import type { RedisCluster } from "../test/support/redis-cluster.js";
import { startRedisSentinel } from "../test/support/redis-sentinel.js";
import type { RedisSentinelSet } from "../test/support/redis-sentinel.js";
import { startRedisServer } from "../test/support/redis-server.js";
import type { RedisServer } from "../test/support/redis-server.js";
import type { ChaosOptions, RedisTopology } from "./options.js";
import { redisCommand } from "./redis-command.js";

/** What a Redis fault did, for the fault log. */
export interface RedisFaultDone {
  readonly target: string;
  readonly detail: string;
  /** Epoch ms of the fault's moments (a failover: `killedAt`, `promotedAt`, `rejoinedAt`). */
  readonly marks?: Readonly<Record<string, number>>;
}

export interface ChaosRedis {
  readonly topology: RedisTopology;
  /** One line for the run's header. */
  readonly label: string;
  /** REDIS_URL for the brokers ("" when `brokerEnv` names the servers). */
  readonly redisUrl: string;
  /** The brokers' settings that name the servers (REDIS_SENTINELS…, REDIS_CLUSTER_NODES). */
  readonly brokerEnv: Readonly<Record<string, string>>;
  /** `single` only: stop Redis as `how`, wait `downMs`, start it again on its AOF. */
  restart(how: "shutdown-nosave" | "sigkill", downMs: number): Promise<RedisFaultDone>;
  /** FLUSHALL on every master. */
  wipe(): Promise<RedisFaultDone>;
  /** Not `single`: SIGKILL the pool's master, wait for a replica's promotion, `downMs` later restart the old one. */
  failover(downMs: number): Promise<RedisFaultDone>;
  stop(): Promise<void>;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}

/** How soon Sentinel and Cluster fail a silent master over (down-after-milliseconds, cluster-node-timeout). */
export const FAILOVER_AFTER_MS = 1_000;

function single(server: RedisServer, o: ChaosOptions): ChaosRedis {
  return {
    topology: "single",
    label: `one redis-server :${server.port} (AOF, appendfsync ${o.appendfsync})`,
    redisUrl: server.url,
    brokerEnv: {},
    async restart(how, downMs) {
      if (how === "sigkill") {
        await server.kill();
      } else {
        await redisCommand({ port: server.port, args: ["SHUTDOWN", "NOSAVE"] }).catch(() => "");
        await server.exited();
      }
      await sleep(downMs);
      await server.restart();
      return {
        target: `redis :${server.port}`,
        detail: `${how === "sigkill" ? "SIGKILL" : "SHUTDOWN NOSAVE"}, restarted on its AOF after ${downMs} ms`,
      };
    },
    async wipe() {
      const reply = await redisCommand({ port: server.port, args: ["FLUSHALL"] });
      return { target: `redis :${server.port}`, detail: `FLUSHALL (${reply})` };
    },
    failover() {
      return Promise.reject(new Error("one redis-server has no replica to fail over to (CHAOS_REDIS=sentinel or cluster)"));
    },
    stop: () => server.stop(),
  };
}

function sentinel(set: RedisSentinelSet, o: ChaosOptions): ChaosRedis {
  return {
    topology: "sentinel",
    label: `Redis with Sentinel: a master and a replica (AOF, appendfsync ${o.appendfsync}), 3 Sentinels (down-after ${FAILOVER_AFTER_MS} ms) at ${set.sentinelAddresses.join(", ")}`,
    redisUrl: "",
    brokerEnv: { REDIS_SENTINELS: set.sentinelAddresses.join(","), REDIS_SENTINEL_NAME: set.name },
    restart() {
      return Promise.reject(new Error("CHAOS_REDIS=sentinel restarts Redis only by failing it over (redis-failover)"));
    },
    async wipe() {
      const master = await set.master();
      const reply = await redisCommand({ port: master.port, args: ["FLUSHALL"] });
      return { target: `master :${master.port}`, detail: `FLUSHALL (${reply})` };
    },
    async failover(downMs) {
      const { killed, promoted, killedAt } = await set.killMaster();
      const promotedAt = Date.now();
      await sleep(killedAt + downMs - Date.now());
      await set.restart(killed);
      return {
        target: `master :${killed.port}`,
        detail: `SIGKILL; :${promoted.port} promoted after ${promotedAt - killedAt} ms; the old master back as its replica after ${Date.now() - killedAt} ms`,
        marks: { killedAt, promotedAt, rejoinedAt: Date.now() },
      };
    },
    stop: () => set.stop(),
  };
}

function cluster(c: RedisCluster, o: ChaosOptions, keyPrefix: string): ChaosRedis {
  // the master of the pool's keys (of its first shard, with POOL_SHARDS)
  const shards = new ShardMap(parseShardCounts(o.poolShards));
  const poolKey = `${keyPrefix}:{${shards.name("default", 0)}}:m`;
  return {
    topology: "cluster",
    label: `Redis Cluster: 3 masters with a replica each (cluster-node-timeout ${FAILOVER_AFTER_MS} ms) at ${c.addresses.join(", ")}`,
    redisUrl: "",
    brokerEnv: { REDIS_CLUSTER_NODES: c.addresses.join(",") },
    restart() {
      return Promise.reject(new Error("CHAOS_REDIS=cluster restarts Redis only by failing it over (redis-failover)"));
    },
    async wipe() {
      await c.flushAll();
      return { target: "every master", detail: "FLUSHALL" };
    },
    async failover(downMs) {
      const master = await c.masterOf(poolKey);
      const killedAt = Date.now();
      await master.server.kill();
      for (;;) {
        const now = await c.masterOf(poolKey).catch(() => master);
        if (now.address !== master.address) break;
        if (Date.now() > killedAt + 30_000) throw new Error(`no replica of ${master.address} was promoted within 30 s`);
        await sleep(50);
      }
      const promotedAt = Date.now();
      const promoted = await c.masterOf(poolKey);
      await sleep(killedAt + downMs - Date.now());
      await master.server.restart();
      await c.waitHealthy();
      return {
        target: `master ${master.address} (${poolKey})`,
        detail: `SIGKILL; ${promoted.address} promoted after ${promotedAt - killedAt} ms; the old master back as its replica after ${Date.now() - killedAt} ms`,
        marks: { killedAt, promotedAt, rejoinedAt: Date.now() },
      };
    },
    stop: () => c.stop(),
  };
}

/** Start the Redis CHAOS_REDIS names; `dir` keeps a single server's AOF. */
export async function startChaosRedis(o: ChaosOptions, opts: { readonly dir: string; readonly keyPrefix: string }): Promise<ChaosRedis> {
  switch (o.redis) {
    case "single":
      return single(await startRedisServer({ persistence: { dir: opts.dir, appendfsync: o.appendfsync } }), o);
    case "sentinel":
      return sentinel(await startRedisSentinel({ downAfterMs: FAILOVER_AFTER_MS, persistence: { appendfsync: o.appendfsync } }), o);
    case "cluster":
      return cluster(await startRedisCluster({ nodeTimeoutMs: FAILOVER_AFTER_MS }), o, opts.keyPrefix);
  }
}
