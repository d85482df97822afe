/**
 * The conformance suite against a sharded pool: every pool of the store spread over 3 shards of
 * one Redis store (one throwaway redis-server for the file, a fresh key prefix per test). A
 * sharded pool must answer every store call as an unsharded one would.
 */
import { randomBytes } from "node:crypto";
import { createRedisClient, RedisStore } from "../../../../src/store/redis/index.js";
import { ShardedStore } from "../../../../src/store/sharded/sharded-store.js";
import { ShardMap } from "../../../../src/store/sharded/shard-map.js";
import { withRedis } from "../../../support/with-redis.js";
import { describeStoreConformance, type StoreDeps } from "../../../sdk/engine/conformance/index.js";

const redis = withRedis();

/** A store of 3 shards per pool on a fresh key prefix; its keys are deleted after the test. */
async function shardedStore({ clock, random, scoring }: StoreDeps) {
  const token = randomBytes(6).toString("hex");
  const inner = new RedisStore({ client: createRedisClient({ url: redis.url() }), scoring, clock, random, prefix: `pbt-${token}:` });
  const store = new ShardedStore({ inner, shards: new ShardMap({ all: 3, byPool: {} }), eventRoundMs: 50 });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await redis.deleteKeys(`pbt-${token}:*`);
    },
  };
}

describeStoreConformance("ShardedStore, 3 shards", shardedStore, { sharded: true });
