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
  if (on) {
    await markExisting(env, pool, ids, "xc");
    return;
  }
  const keys = env.keys.pool(pool);
  await inChunks(ids, (id) => env.runner.call((c) => c.hdel(keys.proxy(id), "xc")));
}

/** The ids of host `host`'s proxies in store pool `pool`. */
export async function hostMembers(env: StoreEnv, pool: string, host: string): Promise<string[]> {
  return env.runner.call((c) => c.smembers(`${env.keys.pool(pool).base}h:${host}`));
}

/** Mark the proxies `ids` of store pool `pool` as sharing their host (with proxies of other shards). */
export async function markSharesHost(env: StoreEnv, pool: string, ids: readonly string[]): Promise<void> {
  await markExisting(env, pool, ids, "xh");
}

/** Commands sent at once (pipelined on the connection), at most. */
const CHUNK = 500;

/**
 * Set `field` on the proxies `ids` of store pool `pool` that it still has (HSET would make a
 * record of a removed one). The pool's flag `xs` (exits to read) is set first, so that no acquire
 * sees a mark without reading it; the ids go a chunk at a time, each chunk's commands at once.
 */
async function markExisting(env: StoreEnv, pool: string, ids: readonly string[], field: "xc" | "xh"): Promise<void> {
  if (ids.length === 0) return;
  const keys = env.keys.pool(pool);
  await env.runner.call((c) => c.hset(keys.meta, "xs", "1"));
  await inChunks(ids, async (id) => {
    if ((await env.runner.call((c) => c.exists(keys.proxy(id)))) === 0) return;
    await env.runner.call((c) => c.hset(keys.proxy(id), field, "1"));
  });
}

async function inChunks(ids: readonly string[], step: (id: string) => Promise<unknown>): Promise<void> {
  for (let at = 0; at < ids.length; at += CHUNK) await Promise.all(ids.slice(at, at + CHUNK).map(step));
}
