/**
 * The one place that builds Redis key names. Every key of a pool carries the hash tag
 * `{<pool>}` so that all of them land in one Redis Cluster slot, e.g. `pb:{default}:idx`.
 *
 * Layout (P = `<prefix>:{<pool>}:`):
 * - `P m`             hash:   pool meta: pv policy version (absent = "0"), qn earliest
 *                             quarantine return (absent = none)
 * - `P pol`           hash:   pattern → policy JSON
 * - `P polh`          list:   replaced policy sets, newest first (lua/includes/policyHistory.lua)
 * - `P all`           zset:   every proxy id, score 0 (id order for listProxies)
 * - `P idx`           zset:   ACTIVE proxy id → −score (ZRANGE 0.. = best first, ties by id)
 * - `P idx:t:<tier>`  zset:   the same for one tier
 * - `P idx:l:<k>=<v>` zset:   the same for one label (escaped as in the record)
 * - `P q`             zset:   QUARANTINED proxy id → until (epoch ms)
 * - `P bl`            set:    BLACKLISTED proxy ids
 * - `P ws`            zset:   worker id → last seen (epoch ms), at most MAX_WORKERS_PER_POOL ids
 * - `P wf`            zset:   worker id → the last time it said it keeps a fallback pool
 * - `P p:<id>`        hash:   proxy record
 * - `P b:<dk>`        zset:   busy index of a domain-key, proxy id → blockedUntil
 * - `P d:<dk>`        hash:   adaptive pacing of a domain-key: a interval, l learned limit, t when
 * - `P ad`            zset:   adapted domain-keys → their interval
 * - `P rsv`           hash:   proxy id → the silent worker it is reserved for (fallback shares)
 * - `P r:<dk>:<id>`   hash:   pair (proxy, domain-key) state; field h = its live leases
 * - `P l:<hex>`       string: tombstone of a lease that expired (released ones: the pair's field t)
 * - `P s:<session>`   string: sticky session binding
 */

/** Default key prefix (a prefix that ends with ":" gets no second one). */
export const DEFAULT_PREFIX = "pb";

/** A pool, or shard i (1..63) of a sharded pool: `<pool>~<i>` (src/store/sharded). */
const POOL_NAME = /^[A-Za-z0-9_-]{1,64}(?:~[1-9]\d?)?$/;

/** Whether `pool` is a valid store pool name (`[A-Za-z0-9_-]{1,64}`, or a shard of one). */
export function isPoolName(pool: string): boolean {
  return POOL_NAME.test(pool);
}

/** Key names of one pool. */
export class PoolKeys {
  /** `<prefix>:{<pool>}:`, the start of every key of the pool (the scripts build keys from it). */
  readonly base: string;
  readonly meta: string;
  readonly policies: string;
  readonly policyHistory: string;
  readonly adapted: string;
  readonly reserved: string;
  readonly all: string;
  readonly index: string;
  readonly quarantine: string;
  readonly blacklist: string;
  readonly workers: string;
  readonly fallbackWorkers: string;

  constructor(prefix: string, pool: string) {
    if (!isPoolName(pool)) throw new RangeError(`invalid pool name "${pool}"`);
    this.base = `${prefix.endsWith(":") ? prefix : `${prefix}:`}{${pool}}:`;
    this.meta = `${this.base}m`;
    this.policies = `${this.base}pol`;
    this.policyHistory = `${this.base}polh`;
    this.adapted = `${this.base}ad`;
    this.reserved = `${this.base}rsv`;
    this.all = `${this.base}all`;
    this.index = `${this.base}idx`;
    this.quarantine = `${this.base}q`;
    this.blacklist = `${this.base}bl`;
    this.workers = `${this.base}ws`;
    this.fallbackWorkers = `${this.base}wf`;
  }

  /** Candidate index of a tier; the whole index for tier "". */
  candidates(tier: string): string {
    return tier === "" ? this.index : `${this.base}idx:t:${tier}`;
  }

  /** A proxy's record. */
  proxy(id: string): string {
    return `${this.base}p:${id}`;
  }

  /** The busy index of a domain-key. */
  busy(domainKey: string): string {
    return `${this.base}b:${domainKey}`;
  }

  /** The adaptive pacing of a domain-key. */
  pacing(domainKey: string): string {
    return `${this.base}d:${domainKey}`;
  }

  /** The state of the pair (proxy, domain-key). */
  pair(domainKey: string, id: string): string {
    return `${this.base}r:${domainKey}:${id}`;
  }

  /** The tombstone of a lease, by the random part of its id. */
  lease(hex: string): string {
    return `${this.base}l:${hex}`;
  }

  /** A sticky session binding. */
  session(sessionKey: string): string {
    return `${this.base}s:${sessionKey}`;
  }
}

/** Builds and caches `PoolKeys` per pool for one prefix. */
export class KeyBuilder {
  private readonly cache = new Map<string, PoolKeys>();

  constructor(readonly prefix: string = DEFAULT_PREFIX) {}

  /** The keys of `pool` (throws `RangeError` on an invalid pool name). */
  pool(pool: string): PoolKeys {
    let keys = this.cache.get(pool);
    if (keys === undefined) {
      keys = new PoolKeys(this.prefix, pool);
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(pool, keys);
    }
    return keys;
  }
}
