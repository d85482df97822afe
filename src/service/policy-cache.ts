import type { PolicySet } from "@proxybroker/sdk/model";
import type { LeaseStore } from "@proxybroker/sdk/engine";

/** What the cache needs besides the store. */
export interface PolicyCacheOptions {
  /** How long grants stay held after a loss of state: the longest TTL that may still be in use. */
  readonly holdMs: () => number;
  /** The store lost a pool's state (its epoch changed or disappeared under this broker). */
  readonly onLost?: (pool: string) => void;
}

/**
 * The broker's copy of each pool's domain policies and epoch. Policies live in the store so every
 * replica applies the same ones; each acquire presents the version it resolved with and the store
 * answers `stale-policy` when it changed, so a replica never grants under an old policy and needs
 * no extra round trip while nothing changes. The version carries the pool's epoch: when the store
 * lost the pool's state, the next acquire is stale, the reload finds the epoch gone or changed,
 * and the store is told to hold grants for the longest TTL that may still be in use.
 */
export class PolicyCache {
  private readonly sets = new Map<string, PolicySet>();
  private readonly loading = new Map<string, Promise<PolicySet>>();

  constructor(
    private readonly store: LeaseStore,
    private readonly opts: PolicyCacheOptions,
  ) {}

  /** Pools whose policies are cached (the pools this broker served). */
  pools(): string[] {
    return [...this.sets.keys()];
  }

  /**
   * Whether this broker serves `pool`: it had proxies when its policies were loaded. A pool
   * without any is neither cached nor written to (no epoch), so a client that names pools at
   * random leaves nothing behind, here or in the store.
   */
  has(pool: string): boolean {
    return this.sets.has(pool);
  }

  /** The cached set of a pool served by this broker, without loading it (undefined: not cached). */
  cached(pool: string): PolicySet | undefined {
    return this.sets.get(pool);
  }

  /** The cached set of a pool, loaded on first use. */
  get(pool: string): Promise<PolicySet> {
    const cached = this.sets.get(pool);
    return cached !== undefined ? Promise.resolve(cached) : this.reload(pool);
  }

  /** Load the pool's policies from the store (concurrent callers share one load). */
  reload(pool: string): Promise<PolicySet> {
    const inFlight = this.loading.get(pool);
    if (inFlight !== undefined) return inFlight;
    const p = this.load(pool).finally(() => this.loading.delete(pool));
    this.loading.set(pool, p);
    return p;
  }

  /**
   * The store's server changed (restart, failover): writes may be lost. Hold grants on every pool
   * this broker served, and reload their policies.
   */
  async serverChanged(): Promise<void> {
    for (const [pool, set] of [...this.sets]) {
      await this.store.ensureEpoch(pool, { expected: set.epoch, holdMs: this.opts.holdMs(), lost: true });
      this.opts.onLost?.(pool);
      await this.reload(pool);
    }
  }

  private async load(pool: string): Promise<PolicySet> {
    const cached = this.sets.get(pool);
    const known = cached?.epoch;
    let set = await this.store.listPolicies(pool);
    if (cached === undefined && set.proxies === 0) return set;
    if (set.epoch === "" || (known !== undefined && set.epoch !== known)) {
      await this.store.ensureEpoch(pool, { expected: known ?? "", holdMs: this.opts.holdMs(), lost: false });
      if (known !== undefined) this.opts.onLost?.(pool);
      set = await this.store.listPolicies(pool);
      // The policies went with the state: set again the ones this broker knew (a site's pacing
      // must not lapse because Redis lost its data), unless someone set new ones meanwhile.
      if (cached !== undefined && cached.policies.length > 0 && set.policies.length === 0) {
        for (const p of cached.policies) await this.store.setPolicy(pool, p);
        set = await this.store.listPolicies(pool);
      }
    }
    this.sets.set(pool, set);
    return set;
  }
}
