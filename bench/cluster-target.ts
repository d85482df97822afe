/**
 * The Redis Cluster the cluster scenarios run on: 3 masters with a replica each
 * (test/support/redis-cluster.ts), started once on first use, with a connection to each master.
 */
import { Redis } from "ioredis";
import { startRedisCluster } from "../test/support/redis-cluster.js";
import type { RedisCluster } from "../test/support/redis-cluster.js";
import type { StoreTarget } from "./scenarios.js";

export interface ClusterTarget extends StoreTarget {
  stop(): Promise<void>;
}

export async function startClusterTarget(): Promise<ClusterTarget> {
  const cluster: RedisCluster = await startRedisCluster({ masters: 3, replicas: 1 });
  const all = cluster.nodes.map((n) => new Redis(n.server.port, "127.0.0.1"));
  const masters: Redis[] = [];
  for (const r of all) if ((await r.info("replication")).includes("role:master")) masters.push(r);
  return {
    env: { REDIS_CLUSTER_NODES: cluster.addresses.join(",") },
    servers: masters,
    flush: async () => {
      for (const m of masters) await m.flushall();
    },
    stop: async () => {
      for (const r of all) r.disconnect();
      await cluster.stop();
    },
  };
}
