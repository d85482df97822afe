/**
 * The Redis store on a real Redis Cluster (3 masters, 1 replica each): the whole conformance
 * suite, pools spread over slots and masters, and the broker on the cluster through a master
 * failover.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { createRedisCluster, RedisStore, KeyBuilder } from "../../../../src/store/redis/index.js";
import { startRedisCluster, type RedisCluster } from "../../../support/redis-cluster.js";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { OutcomeKind, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { brokerProcess } from "../../../support/broker-process.js";
import { startBroker, uniquePrefix } from "../../../support/broker.js";
import { StreamClient, granted } from "../../../support/stream-client.js";
import { exclusivityBreaches, startFailoverLoad, type HeldLease } from "../../../support/failover-load.js";
import { describeStoreConformance } from "../../../sdk/engine/conformance/index.js";
import { ShardMap } from "../../../../src/store/sharded/shard-map.js";

let cluster: RedisCluster;

beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

/** Delete every key whose name contains `token`, on every master. */
async function deleteKeys(token: string): Promise<void> {
  for (const n of cluster.nodes) {
    const node = new Redis(n.server.port, "127.0.0.1", { maxRetriesPerRequest: 1 });
    try {
      if (!(await node.info("replication")).includes("role:master")) continue;
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", `*${token}*`, "COUNT", 500);
        cursor = next;
        for (const k of keys) await node.del(k);
      } while (cursor !== "0");
    } finally {
      node.disconnect();
    }
  }
}

describeStoreConformance("RedisStore on a Redis Cluster", async ({ clock, random, scoring }) => {
  const token = randomBytes(6).toString("hex");
  const client = createRedisCluster({ nodes: cluster.addresses });
  const store = new RedisStore({ client, scoring, clock, random, prefix: `pbt-${token}:` });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await deleteKeys(token);
    },
  };
});

describe("RedisStore on a Redis Cluster", () => {
  it("spreads pools over slots and masters, every pool's keys in its own slot", async () => {
    const keys = new KeyBuilder("pb");
    const owners = new Set<string>();
    for (let i = 0; i < 12; i++) owners.add((await cluster.masterOf(keys.pool(`pool-${i}`).meta)).address);
    expect(owners.size).toBe(3);
    const store = new RedisStore({
      client: createRedisCluster({ nodes: cluster.addresses }),
      scoring: DEFAULT_SCORING,
      prefix: `pbt-${randomBytes(4).toString("hex")}:`,
    });
    try {
      for (let i = 0; i < 6; i++) {
        await store.addProxies(`pool-${i}`, [{ id: `10.3.0.${i}:1`, url: `http://10.3.0.${i}:1`, tier: "", labels: {} }]);
      }
      const ids = (await store.server()).id.split(",");
      expect(ids.length).toBe(3);
      for (let i = 0; i < 6; i++) expect((await store.listPolicies(`pool-${i}`)).proxies).toBe(1);
    } finally {
      await store.close();
    }
  });
});

describe("a sharded pool on a Redis Cluster", () => {
  it("spreads one pool over the masters; the broker leases every proxy of every shard once, then denies", { timeout: 30_000 }, async () => {
    const prefix = uniquePrefix();
    const a = await startBroker({ kind: "cluster", clusterNodes: cluster.addresses, prefix, shards: 6 });
    const b = await startBroker({ kind: "cluster", clusterNodes: cluster.addresses, prefix, shards: 6 });
    try {
      const keys = new KeyBuilder(prefix);
      const owners = new Set<string>();
      for (const name of new ShardMap({ all: 6, byPool: {} }).names("default"))
        owners.add((await cluster.masterOf(keys.pool(name).meta)).address);
      expect(owners.size).toBeGreaterThan(1);
      const urls = Array.from({ length: 24 }, (_, i) => `10.6.0.${i + 1}:8080`);
      await a.admin.addProxies({ proxies: urls.map((url) => ({ url })) });
      const got = new Set<string>();
      const clients = [new StreamClient(a.broker), new StreamClient(b.broker)];
      for (let i = 0; i < 24; i++)
        got.add(granted(await clients[i % 2]!.acquire({ domain: "big.example", workerId: `w${i}` })).proxy?.id ?? "");
      expect(got.size).toBe(24);
      const denied = await clients[0]!.acquire({ domain: "big.example", workerId: "w-late" });
      expect(denied.case).toBe("denied");
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});

describe("the broker on a Redis Cluster", () => {
  it("two replicas: a release through one grants a waiter on the other at once (sharded pub/sub in the pool's slot)", {
    timeout: 30_000,
  }, async () => {
    const prefix = uniquePrefix();
    const settings = { waitPollMs: 10_000 };
    const a = await startBroker({ kind: "cluster", clusterNodes: cluster.addresses, prefix, settings });
    const b = await startBroker({ kind: "cluster", clusterNodes: cluster.addresses, prefix, settings });
    try {
      await a.admin.addProxies({ proxies: [{ url: "10.5.0.1:8080" }] });
      const holder = new StreamClient(a.broker);
      const lease = granted(await holder.acquire({ domain: "wake.example", workerId: "w1" }));
      const waiting = new StreamClient(b.broker).acquire({ domain: "wake.example", workerId: "w2", maxWaitMs: 5_000 });
      await new Promise((r) => setTimeout(r, 300));
      const sentAt = Date.now();
      await holder.release(lease.leaseId, lease.fencingToken, OutcomeKind.SUCCESS);
      granted(await waiting);
      const ms = Date.now() - sentAt;
      console.log(`cluster cross-replica wake-up: ${ms} ms`);
      expect(ms).toBeLessThan(1_000);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  for (const shards of [1, 3]) {
    const what = shards === 1 ? "its pool's master" : `the master of one of its pool's ${shards} shards (POOL_SHARDS)`;
    it(`goes on by itself through a failover of ${what}: grants held after it, no pair leased twice, tokens increasing`, {
      timeout: 90_000,
    }, async () => {
      const dir = mkdtempSync(join(tmpdir(), "pb-cluster-broker-"));
      const file = join(dir, "proxies.txt");
      writeFileSync(file, Array.from({ length: 4 }, (_, i) => `http://10.4.0.${i + 1}:3128`).join("\n"));
      const prefix = `pbf-${randomBytes(4).toString("hex")}`;
      const broker = await brokerProcess({
        redisUrl: "",
        env: {
          REDIS_CLUSTER_NODES: cluster.addresses.join(","),
          REDIS_KEY_PREFIX: prefix,
          PROXIES_FILE: file,
          LEASE_TTL_DEFAULT_MS: "1000",
          ...(shards > 1 ? { POOL_SHARDS: String(shards) } : {}),
        },
      });
      await broker.start();
      const channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
      const load = startFailoverLoad(createClient(ProxyBroker, channel), { loops: 8, ttlMs: 1_000 });
      try {
        await new Promise((r) => setTimeout(r, 2_000));
        // the master of the shard of the first proxy (the pool's own master when unsharded)
        const map = new ShardMap({ all: shards, byPool: {} });
        const killedShard = map.shardOf("default", "10.4.0.1:3128");
        const shardPool = map.name("default", killedShard);
        const master = await cluster.masterOf(`${prefix}:{${shardPool}}:m`);
        // every shard that master holds
        const onMaster = new Set<number>();
        for (let i = 0; i < shards; i++)
          if ((await cluster.masterOf(`${prefix}:{${map.name("default", i)}}:m`)).address === master.address) onMaster.add(i);
        const killedAt = Date.now();
        await master.server.kill();
        // the cluster promotes the replica; the broker finds it by itself
        await expect.poll(() => load.grantsAskedAfter(killedAt + 100).length, { timeout: 30_000, interval: 100 }).toBeGreaterThan(20);
        await load.stop();
        const back = Math.min(...load.grantsAskedAfter(killedAt + 100).map((h) => h.from));
        console.log(
          `cluster failover: master of {${shardPool}} killed; first grant ${back - killedAt} ms later; ${load.held.length} leases, ${load.failures.length} failed acquires meanwhile`,
        );
        // the promoted replica may have missed the last writes: no acquire sent after the kill is
        // granted within a lease TTL of it (the broker holds grants for the longest TTL once it sees
        // another server); an acquire sent before may have been granted by the old master, its
        // answer still on the way
        // (in a sharded pool: on the shards of that master; the others lost nothing)
        const onKilled = (h: HeldLease) => onMaster.has(map.shardOf("default", h.proxy));
        expect(load.grantsAskedAfter(killedAt).filter((h) => h.from < killedAt + 1_000 && onKilled(h))).toEqual([]);
        // one holder per pair at any time, and tokens increasing in grant order
        expect(exclusivityBreaches(load.held)).toEqual([]);
        await master.server.restart();
        await cluster.waitHealthy();
      } finally {
        await load.stop();
        channel.close();
        await broker.stop();
      }
    });
  }
});
