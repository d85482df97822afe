/** POOL_SHARDS: how many shards each pool has (src/store/sharded/shard-map.ts lays them out). */

/** Shards per pool: `byPool` entries override `all` (1 = unsharded). */
export interface ShardCounts {
  readonly all: number;
  readonly byPool: Readonly<Record<string, number>>;
}

/** The most shards one pool may have. */
export const MAX_SHARDS = 64;

/** Whether any pool has more than one shard. */
export function anySharded(counts: ShardCounts): boolean {
  return counts.all > 1 || Object.values(counts.byPool).some((n) => n > 1);
}

/**
 * Parse POOL_SHARDS: `n` (every pool), `pool=n,…` (those pools), or both (`4,big=16`); "" = 1.
 * Throws a RangeError naming the bad part.
 */
export function parseShardCounts(text: string): ShardCounts {
  let all = 1;
  const byPool: Record<string, number> = {};
  for (const part of text
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "")) {
    const m = /^(?:([A-Za-z0-9_-]{1,64})=)?(\d{1,3})$/.exec(part);
    const n = Number(m?.[2]);
    if (m === null || !Number.isInteger(n) || n < 1 || n > MAX_SHARDS) {
      throw new RangeError(`"${part}" is not a shard count 1..${MAX_SHARDS} or pool=count`);
    }
    if (m[1] === undefined) all = n;
    else byPool[m[1]] = n;
  }
  return { all, byPool };
}
