/**
 * A sharded store for one test on a throwaway redis-server (with-redis.ts): a fresh key
 * prefix, a fake clock, and optionally a fault injected into calls of the inner Redis store.
 */
import { randomBytes } from "node:crypto";
import { onTestFinished } from "vitest";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { StoreUnavailableError } from "@proxybroker/sdk/engine";
import { createRedisClient, RedisStore } from "../../src/store/redis/index.js";
import { ShardedStore } from "../../src/store/sharded/sharded-store.js";
import { ShardMap } from "../../src/store/sharded/shard-map.js";
import { fakeClock, seededRandom, type FakeClock } from "./fake-clock.js";
import type { FileRedis } from "./with-redis.js";

export interface OpenedShards {
  readonly store: ShardedStore;
  readonly inner: RedisStore;
  readonly clock: FakeClock;
  readonly prefix: string;
}

export interface OpenShardsOptions {
  /** Shards of every pool. Default 3. */
  readonly shards?: number;
  /** The key prefix (another store on the same prefix is a replica). Default: a fresh one. */
  readonly prefix?: string;
  /** Calls of the inner store for which this answers true reject as unreachable. */
  readonly fail?: (method: string, args: readonly unknown[]) => boolean;
  readonly onError?: (what: string, err: unknown) => void;
}

/** `target` with the calls `fail` picks rejected as if Redis were unreachable. */
function withFaults<T extends object>(target: T, fail: (method: string, args: readonly unknown[]) => boolean): T {
  return new Proxy(target, {
    get(t, prop) {
      const value: unknown = Reflect.get(t, prop, t);
      if (typeof value !== "function") return value;
      return (...args: unknown[]): unknown => {
        if (fail(String(prop), args)) return Promise.reject(new StoreUnavailableError(`injected: ${String(prop)} failed`));
        return Reflect.apply(value, t, args);
      };
    },
  });
}

/** Open one; its keys are deleted after the test (unless another store opened them). */
export function openShards(redis: FileRedis, options: OpenShardsOptions = {}): OpenedShards {
  const prefix = options.prefix ?? `pbs-${randomBytes(6).toString("hex")}:`;
  const clock = fakeClock();
  const inner = new RedisStore({
    client: createRedisClient({ url: redis.url() }),
    scoring: DEFAULT_SCORING,
    clock: () => clock.now(),
    random: seededRandom(11),
    prefix,
  });
  const host = options.fail === undefined ? inner : withFaults(inner, options.fail);
  const shards = new ShardMap({ all: options.shards ?? 3, byPool: {} });
  const store = new ShardedStore({
    inner: host,
    shards,
    eventRoundMs: 50,
    ...(options.onError === undefined ? {} : { onError: options.onError }),
  });
  onTestFinished(async () => {
    await store.close();
    if (options.prefix === undefined) await redis.deleteKeys(`${prefix}*`);
  });
  return { store, inner, clock, prefix };
}
