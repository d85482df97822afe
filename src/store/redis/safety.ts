/**
 * What the broker checks of a Redis before it runs on it: a server that may evict keys can drop a
 * live lease (two workers on one proxy), so an evicting `maxmemory-policy` is refused; whether
 * the data survives a restart (AOF, RDB snapshots) is reported for the log.
 */
import type { Redis } from "ioredis";
import type { RedisClient } from "./scripts.js";
import { allServers, whenReady } from "./nodes.js";

/** What was found. */
export interface RedisSafety {
  /** `maxmemory-policy`, or undefined when CONFIG is not allowed (managed Redis). */
  readonly maxmemoryPolicy: string | undefined;
  /** `appendonly` and `appendfsync` (undefined when CONFIG is not allowed). */
  readonly appendonly: string | undefined;
  readonly appendfsync: string | undefined;
  /** `save` (RDB snapshot schedule; "" = none). */
  readonly save: string | undefined;
}

/**
 * Read the settings that matter (CONFIG GET; a server that refuses CONFIG answers undefined). On
 * a Cluster every node is read: an evicting one is what counts, else the first node's settings.
 */
export async function inspectRedis(client: RedisClient, readyTimeoutMs = 5_000): Promise<RedisSafety> {
  // before the first connection (the offline queue is off) CONFIG would fail and look refused
  await whenReady(client, readyTimeoutMs);
  const found = await Promise.all(allServers(client).map((node) => inspectServer(node)));
  return (
    found.find((s) => refusal(s) !== undefined) ??
    found[0] ?? { maxmemoryPolicy: undefined, appendonly: undefined, appendfsync: undefined, save: undefined }
  );
}

async function inspectServer(client: Redis): Promise<RedisSafety> {
  const get = async (name: string): Promise<string | undefined> => {
    try {
      const reply: unknown = await client.call("CONFIG", "GET", name);
      return Array.isArray(reply) && typeof reply[1] === "string" ? reply[1] : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    maxmemoryPolicy: await get("maxmemory-policy"),
    appendonly: await get("appendonly"),
    appendfsync: await get("appendfsync"),
    save: await get("save"),
  };
}

/** Why the broker must not run on this Redis (undefined: it may). */
export function refusal(s: RedisSafety): string | undefined {
  if (s.maxmemoryPolicy !== undefined && s.maxmemoryPolicy !== "noeviction") {
    return `Redis maxmemory-policy is ${s.maxmemoryPolicy}: it may evict a live lease, and two workers would share a proxy. Set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf)`;
  }
  return undefined;
}

/** One line for the log: what a restart of this Redis keeps. */
export function persistenceLine(s: RedisSafety): string {
  if (s.appendonly === undefined) return "Redis persistence unknown (CONFIG not allowed)";
  const aof = s.appendonly === "yes" ? `AOF on (appendfsync ${s.appendfsync ?? "?"})` : "AOF off";
  const rdb = s.save === undefined || s.save === "" ? "no RDB snapshots" : `RDB snapshots (save ${s.save})`;
  const warning = s.appendonly === "yes" ? "" : " — a Redis restart loses the leases: grants pause for the longest lease TTL after one";
  return `Redis persistence: ${aof}, ${rdb}${warning}`;
}
