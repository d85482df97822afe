/**
 * The store the shards of a sharded pool live in (RedisStore), and what every part of the
 * sharded store is built from.
 */
import type { DomainPacing, ProxySpecInput, ProxyView } from "@proxybroker/sdk/model";
import type { HealthCheckRecord } from "../redis/admin.js";
import type { LeaseStore, ReleaseFeed } from "@proxybroker/sdk/engine";
import type { LayoutStore } from "./layout.js";
import type { ShardMap } from "./shard-map.js";

/**
 * The store the shards live in: a release feed shared by broker replicas, and a way to raise one
 * shard's adaptive pacing to another's (RedisStore).
 */
export type ShardHost = LeaseStore &
  LayoutStore & {
    releaseFeed(): ReleaseFeed;
    raisePacing(pool: string, pacing: DomainPacing): Promise<void>;
    recordHealthIn(pools: { pool: string; auditPool: string }, check: HealthCheckRecord): Promise<ProxyView | undefined>;
    exitMembers(pool: string, exitIp: string): Promise<string[]>;
    exitConflicted(pool: string, id: string): Promise<boolean>;
    hostMembers(pool: string, host: string): Promise<string[]>;
    markSharesHost(pool: string, ids: readonly string[]): Promise<void>;
    markExitConflict(pool: string, ids: readonly string[], on: boolean): Promise<void>;
    addProxiesInLayout(
      pool: string,
      specs: readonly ProxySpecInput[],
      shards: number,
    ): Promise<{ layout: number; added: string[]; updated: string[] }>;
  };

/** The inner store and where a pool's shards are in it. */
export interface Shards {
  readonly inner: ShardHost;
  readonly shards: ShardMap;
}
