/**
 * The shard layout a pool is stored in must be the one a broker serves it with: a broker with
 * another POOL_SHARDS would look for the pool's proxies on other shards, and an import through it
 * would store a proxy a second time, on a second shard, where it could be leased a second time.
 * The count is recorded in the pool's shard 0 (lua/includes/layout.lua) by the first broker with
 * shards that serves it or adds proxies to it — an add checks and records it in the same step as
 * its writes to shard 0, so no proxy lies there without it —; a broker whose count differs
 * refuses the pool.
 */
import { StoreUnavailableError } from "@proxybroker/sdk/engine";
import type { ShardMap } from "./shard-map.js";

/** What the check needs of the store (RedisStore). */
export interface LayoutStore {
  shardLayout(pool: string, shards: number): Promise<number>;
}

/** A pool stored in another shard layout than this broker's: it refuses to serve the pool. */
export class ShardLayoutError extends StoreUnavailableError {}

/** Resolve when `pool` is stored as `shards` says; reject with `ShardLayoutError` otherwise. */
export async function checkLayout(store: LayoutStore, shards: ShardMap, pool: string): Promise<void> {
  const mine = shards.count(pool);
  assertLayout(pool, mine, await store.shardLayout(pool, mine));
}

/**
 * Throw `ShardLayoutError` unless the layout `stored` that the store answered for `pool` is this
 * broker's `mine` (-1: proxies stored unsharded, for a broker with shards).
 */
export function assertLayout(pool: string, mine: number, stored: number): void {
  if (stored === mine) return;
  const setting = mine === 1 ? "POOL_SHARDS unset" : `${mine} shards by POOL_SHARDS`;
  if (stored < 0) {
    throw new ShardLayoutError(
      `pool "${pool}" holds proxies stored unsharded, and this broker has ${setting}: remove them with POOL_SHARDS unset, then import them again (docs/sharding.md)`,
    );
  }
  throw new ShardLayoutError(
    `pool "${pool}" is stored in ${stored} shards, and this broker has ${setting}: run every broker with the same POOL_SHARDS; to change it, remove the pool's proxies with the old setting first (docs/sharding.md)`,
  );
}

/** How long a pool whose layout was found right goes unchecked. */
const LAYOUT_RECHECK_MS = 5_000;

/**
 * `checkLayout` that remembers: a pool found right is not checked again for LAYOUT_RECHECK_MS.
 * Snapshots and reports read policies on every call, and each check is a Redis round trip.
 */
export class LayoutCache {
  /** Pools whose layout was found right, and when. */
  private readonly ok = new Map<string, number>();

  constructor(
    private readonly store: LayoutStore,
    private readonly shards: ShardMap,
  ) {}

  async check(pool: string): Promise<void> {
    const at = this.ok.get(pool);
    const now = Date.now();
    if (at !== undefined && now - at < LAYOUT_RECHECK_MS) return;
    await checkLayout(this.store, this.shards, pool);
    if (this.ok.size >= 10_000) this.ok.clear();
    this.ok.set(pool, now);
  }
}
