/**
 * Where a sharded pool keeps each proxy, and in which order an acquire tries its shards.
 *
 * A pool of `n` shards lives under `n` hash tags: shard 0 is the pool itself (`{big}`), shard i
 * is `{big~i}`, so on a Redis Cluster the shards spread over the slots (and masters) like any
 * pools. A proxy lives in one shard, chosen by a hash of its endpoint (`host:port`), so everything about a proxy (its
 * record, its pairs, its leases) lies in one slot and every guarantee of a pair is kept by one
 * atomic script, as in an unsharded pool. An acquire tries the shards in a rendezvous
 * (highest-random-weight) order of its domain-key: a domain-key starts on the same shard on every
 * broker, and moves on to the next only when that one has nothing eligible.
 *
 * The hashes are part of the stored layout: every broker on one store must compute the same ones.
 */
import { endpointOf } from "@proxybroker/sdk/model";
import type { ShardCounts } from "../../config/shard-counts.js";
import { anySharded } from "../../config/shard-counts.js";

export type { ShardCounts } from "../../config/shard-counts.js";

const SEP = "~";

/** 32-bit FNV-1a of a string's UTF-16 code units, then murmur3's finalizer (better spread of low bits). */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The shard layout of every pool. */
export class ShardMap {
  constructor(private readonly counts: ShardCounts) {}

  /** How many shards `pool` has (1 = unsharded). */
  count(pool: string): number {
    return this.counts.byPool[pool] ?? this.counts.all;
  }

  /** Whether any pool is sharded. */
  any(): boolean {
    return anySharded(this.counts);
  }

  /** The store's pool name of shard `i` of `pool`. */
  name(pool: string, i: number): string {
    return i === 0 ? pool : `${pool}${SEP}${i}`;
  }

  /** The store's pool names of every shard of `pool`, shard 0 first. */
  names(pool: string): string[] {
    return Array.from({ length: this.count(pool) }, (_, i) => this.name(pool, i));
  }

  /** The pool and shard index a store pool name stands for. */
  parse(storePool: string): { readonly pool: string; readonly shard: number } {
    const at = storePool.lastIndexOf(SEP);
    if (at < 0) return { pool: storePool, shard: 0 };
    return { pool: storePool.slice(0, at), shard: Number(storePool.slice(at + 1)) };
  }

  /**
   * The shard that holds proxy `proxyId` of `pool`: a hash of its `host:port` alone, so every
   * username (session) of one endpoint shares a shard — and an id without username, which is its
   * `host:port`, stays where it always was.
   */
  shardOf(pool: string, proxyId: string): number {
    return hash32(endpointOf(proxyId)) % this.count(pool);
  }

  /** The shards of `pool` in the rendezvous order of `key` (a domain-key, a session key). */
  order(pool: string, key: string): number[] {
    const n = this.count(pool);
    const weights = Array.from({ length: n }, (_, i) => hash32(`${key}\x1f${i}`));
    return Array.from({ length: n }, (_, i) => i).sort((a, b) => (weights[b] ?? 0) - (weights[a] ?? 0) || a - b);
  }

  /** `items` grouped by the shard of the proxy id `idOf` gives (only shards that get some). */
  group<T>(pool: string, items: readonly T[], idOf: (item: T) => string): Map<number, T[]> {
    const out = new Map<number, T[]>();
    for (const item of items) {
      const s = this.shardOf(pool, idOf(item));
      const list = out.get(s);
      if (list === undefined) out.set(s, [item]);
      else list.push(item);
    }
    return out;
  }
}
