/**
 * G9 across the shards of a sharded pool (src/store/sharded/shard-exits.ts): the live members of an
 * exit, and the proxies of a host, in one store pool; the mark `xc` that keeps a proxy from being
 * granted while a proxy of a lower shard leaves from its exit, and the mark `xh` of a proxy that
 * shares its host (lua/includes/exits.lua reads both). Plain commands: each is one key's step.
 */
import type { StoreEnv } from "./store-env.js";

/** The ids that are members of exit `exitIp` in store pool `pool` now (current or former). */
export async function exitMembers(env: StoreEnv, pool: string, exitIp: string): Promise<string[]> {
  const keys = env.keys.pool(pool);
  // the injected clock, else this machine's (the scripts' Redis TIME is near it)
  const now = Number(env.now()) || Date.now();
  return env.runner.call((c) => c.zrangebyscore(`${keys.base}x:${exitIp}`, `(${now}`, "+inf"));
}

/** Whether proxy `id` of store pool `pool` is marked. */
export async function exitConflicted(env: StoreEnv, pool: string, id: string): Promise<boolean> {
  return (await env.runner.call((c) => c.hexists(env.keys.pool(pool).proxy(id), "xc"))) === 1;
}

/** Mark (`on`) or unmark the proxies `ids` of store pool `pool` as sharing their exit with a lower shard. */
export async function markExitConflict(env: StoreEnv, pool: string, ids: readonly string[], on: boolean): Promise<void> {
  const keys = env.keys.pool(pool);
  for (const id of ids) {
    if (on) {
      // only a proxy the pool still has (HSET would make a record of a removed one)
      if ((await env.runner.call((c) => c.exists(keys.proxy(id)))) === 0) continue;
      await env.runner.call((c) => c.hset(keys.proxy(id), "xc", "1"));
      await env.runner.call((c) => c.hset(keys.meta, "xs", "1"));
    } else {
      await env.runner.call((c) => c.hdel(keys.proxy(id), "xc"));
    }
  }
}

/** The ids of host `host`'s proxies in store pool `pool`. */
export async function hostMembers(env: StoreEnv, pool: string, host: string): Promise<string[]> {
  return env.runner.call((c) => c.smembers(`${env.keys.pool(pool).base}h:${host}`));
}

/** Mark the proxies `ids` of store pool `pool` as sharing their host (with proxies of other shards). */
export async function markSharesHost(env: StoreEnv, pool: string, ids: readonly string[]): Promise<void> {
  const keys = env.keys.pool(pool);
  for (const id of ids) {
    if ((await env.runner.call((c) => c.exists(keys.proxy(id)))) === 0) continue;
    await env.runner.call((c) => c.hset(keys.proxy(id), "xh", "1"));
    await env.runner.call((c) => c.hset(keys.meta, "xs", "1"));
  }
}
