/**
 * The one place that builds Redis key names. Every key of a pool carries the hash tag
 * `{<pool>}` so that all of them land in one Redis Cluster slot, e.g. `pb:{default}:idx`.
 *
 * Layout (P = `<prefix>:{<pool>}:`):
 * - `P m`             hash:   pool meta: pv policy version (absent = "0"), qn earliest
 *                             quarantine return (absent = none), ep epoch, es grants held until,
 *                             lt the longest lease TTL granted or renewed lately and lta when a
 *                             lease of it last was (includes/lately.lua)
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
 * - `P wy`            zset:   worker id → the last time it said it yields its leases when the
 *                             broker is unreachable
 * - `P wl`            zset:   worker id → the snapshot time of the latest list of live workers it
 *                             said it holds
 * - `P p:<id>`        hash:   proxy record
 * - `P b:<dk>`        zset:   busy index of a domain-key, proxy id → blockedUntil
 * - `P d:<dk>`        hash:   adaptive pacing of a domain-key: a interval, l learned limit, t when
 * - `P ad`            zset:   adapted domain-keys → their interval
 * - `P rsv`           hash:   proxy id → the silent worker it is reserved for (fallback shares);
 *                             "\n<dk>" → the silent worker every proxy of domain-key dk is
 *                             reserved for
 * - `P wd`            hash:   "<worker>\n<dk>" → "<first use>:<last use>" (epoch ms): the
 *                             domain-keys workers leased lately (includes/lately.lua)
 * - `P r:<dk>:<id>`   hash:   pair (proxy, domain-key) state; field h = its live leases
 * - `P l:<hex>`       string: tombstone of a lease that expired (released ones: the pair's field t)
 * - `P s:<session>`   string: sticky session binding
 * - `P src`           hash:   source id → its spec as JSON (sources.ts; never a header's value)
 * - `P srcs`          hash:   source id → its last refresh as JSON
 * - `P srcm:<id>`     set:    the proxy ids source `id` added (only those it removes)
 * - `P evs`           stream: the pool's events (events.ts, lua/includes/events.lua)
 * - `P rq:<worker> <request>` string: the lease granted to a request (lua/includes/grant.lua, replayRequest.lua)
 * - `P ev:<dk>`       channel (not a key): releases of a domain-key's leases (release-feed.ts)
 *
 * Keys of no pool (R = `<prefix>:`):
 * - `R audit`                stream: the audit trail (events.ts)
 * - `R {leader}:<name>`      string: holder of leader lease `name` (lua/campaign-2.lua)
 * - `R {leader}:<name>:t`    string: the last term of that lease
 *
 * The scripts build the keys of a pool they are not handed from `P` (each script's header says
 * which); every other key name is built here.
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
  readonly yieldingWorkers: string;
  readonly listsWorkers: string;
  /** zset worker id → the broker time of the latest pong it said it received (its pings). */
  readonly heardWorkers: string;
  /** Prefix of `P wc:<worker id>`: its last two fallback claims (claims-codec.ts), expiring a day after the last. */
  readonly claimsPrefix: string;
  readonly events: string;
  readonly domainUses: string;
  readonly sources: string;
  readonly sourceStatus: string;

  constructor(prefix: string, pool: string) {
    if (!isPoolName(pool)) throw new RangeError(`invalid pool name "${pool}"`);
    this.base = `${rootOf(prefix)}{${pool}}:`;
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
    this.yieldingWorkers = `${this.base}wy`;
    this.listsWorkers = `${this.base}wl`;
    this.heardWorkers = `${this.base}wh`;
    this.claimsPrefix = `${this.base}wc:`;
    this.events = `${this.base}evs`;
    this.domainUses = `${this.base}wd`;
    this.sources = `${this.base}src`;
    this.sourceStatus = `${this.base}srcs`;
  }

  /** Candidate index of a tier; the whole index for tier "". */
  candidates(tier: string): string {
    return tier === "" ? this.index : `${this.base}idx:t:${tier}`;
  }

  /** The proxy ids a source added. */
  sourceMembers(id: string): string {
    return `${this.base}srcm:${id}`;
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

  /** The channel the releases of a domain-key's leases are published on (SPUBLISH). */
  releaseChannel(domainKey: string): string {
    return `${this.base}ev:${domainKey}`;
  }
}

/** `<prefix>:`: the start of every key name (a prefix that ends with ":" gets no second one). */
function rootOf(prefix: string): string {
  return prefix.endsWith(":") ? prefix : `${prefix}:`;
}

/** Builds and caches `PoolKeys` per pool for one prefix. */
export class KeyBuilder {
  private readonly cache = new Map<string, PoolKeys>();

  /** `<prefix>:`, the start of the keys of no pool. */
  private readonly root: string;
  /** The audit trail. */
  readonly audit: string;

  constructor(readonly prefix: string = DEFAULT_PREFIX) {
    this.root = rootOf(prefix);
    this.audit = `${this.root}audit`;
  }

  /** The keys of leader lease `name`: its holder and its last term, under one hash tag. */
  leader(name: string): [holder: string, term: string] {
    const holder = `${this.root}{leader}:${name}`;
    return [holder, `${holder}:t`];
  }

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
