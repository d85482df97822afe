import type { PolicySet } from "@proxybroker/sdk/model";
import type { StorePolicies, StoreRecovery } from "@proxybroker/sdk/engine";

/** How the store lost (or may have lost) a pool's state, as the cache tells its owner. */
export interface StateLoss {
  /** True: the pool's epoch was gone or changed (its state was lost); false: its server changed and writes may have been lost. */
  readonly certain: boolean;
  /** Grants are held until then (epoch ms). */
  readonly heldUntil: number;
}

/** What the cache needs besides the store. */
export interface PolicyCacheOptions {
  /** The longest lease TTL in use lately in a pool: what a hold after a loss waits for at least. */
  readonly holdMs: (pool: string) => number;
  /** The store lost (or may have lost) a pool's state; told once per loss. */
  readonly onLost?: (pool: string, loss: StateLoss) => void;
  readonly clock: () => number;
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
  /** Pools whose grants must be held (the store's server changed and may have lost writes) → since when. */
  private readonly pendingHolds = new Map<string, number>();

  constructor(
    private readonly store: StorePolicies & StoreRecovery,
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
   * The store's server changed and may have lost writes (a restart that kept less than every
   * acknowledged write, a failover): grants on every pool this broker served are to be held from
   * `since`. Written by `flushHolds`; until then, `holdsPending` is true.
   */
  serverChanged(since: number): void {
    for (const pool of this.sets.keys()) if (!this.pendingHolds.has(pool)) this.pendingHolds.set(pool, since);
  }

  /** Holds that are still to be written to the store. */
  holdsPending(): boolean {
    return this.pendingHolds.size > 0;
  }

  /**
   * Write the pending holds, each from the moment its loss was noticed (a retry after a failure
   * never holds longer), and reload those pools. Rejects at the first that fails; the rest stay
   * pending.
   */
  async flushHolds(): Promise<void> {
    for (const [pool, since] of [...this.pendingHolds]) {
      const set = this.sets.get(pool);
      if (set !== undefined) {
        const state = await this.store.ensureEpoch(pool, { expected: set.epoch, holdMs: this.opts.holdMs(pool), lost: true, since });
        this.opts.onLost?.(pool, { certain: false, heldUntil: state.grantsFrom });
      }
      this.pendingHolds.delete(pool);
      if (set !== undefined) await this.reload(pool);
    }
  }

  private async load(pool: string): Promise<PolicySet> {
    const cached = this.sets.get(pool);
    const known = cached?.epoch;
    let set = await this.store.listPolicies(pool);
    if (cached === undefined && set.proxies === 0) return set;
    if (set.epoch === "" || (known !== undefined && set.epoch !== known)) {
      const state = await this.store.ensureEpoch(pool, {
        expected: known ?? "",
        holdMs: this.opts.holdMs(pool),
        lost: false,
        since: this.opts.clock(),
      });
      if (known !== undefined) this.opts.onLost?.(pool, { certain: true, heldUntil: state.grantsFrom });
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
