/**
 * The Redis store: `RedisStore` (a `LeaseStore` with one Lua script per operation), its client
 * factory and its key layout.
 */
export { RedisStore, type RedisStoreOptions } from "./redis-store.js";
export {
  createRedisClient,
  createRedisCluster,
  createRedisSentinelClient,
  parseClusterNodes,
  reconnectDelayMs,
  MAX_RECONNECT_DELAY_MS,
  type RedisClientOptions,
  type RedisClusterOptions,
  type RedisSentinelOptions,
  type RedisAuth,
} from "./client.js";
export { KeyBuilder, PoolKeys, DEFAULT_PREFIX, isPoolName } from "./keys.js";
export { encodeLeaseId, decodeLeaseId, newLeaseHex, type LeaseIdParts } from "./lease-id.js";
export { ScriptCode, ScriptReplyError, toStoreError, lostReason } from "./errors.js";
export {
  bakeScripts,
  loadScripts,
  registerScripts,
  SCRIPT_KEYS,
  type BakedScripts,
  type ScriptConstants,
  type ScriptName,
  type RedisClient,
} from "./scripts.js";
export { scriptConstants } from "./args.js";
export { inspectRedis, refusal, persistenceLine, type RedisSafety } from "./safety.js";
