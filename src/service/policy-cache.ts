import type { PolicySet } from "@proxybroker/sdk/model";
import type { LeaseStore } from "@proxybroker/sdk/engine";

/**
 * The broker's copy of each pool's domain policies. Policies live in the store so every replica
 * applies the same ones; each acquire presents the version it resolved with and the store
 * answers `stale-policy` when it changed, so a replica never grants under an old policy and
 * needs no extra round trip while nothing changes.
 */
export class PolicyCache {
  private readonly sets = new Map<string, PolicySet>();
  private readonly loading = new Map<string, Promise<PolicySet>>();

  constructor(private readonly store: LeaseStore) {}

  /** Pools whose policies are cached (the pools this broker served). */
  pools(): string[] {
    return [...this.sets.keys()];
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
    const p = this.store
      .listPolicies(pool)
      .then((set) => {
        this.sets.set(pool, set);
        return set;
      })
      .finally(() => this.loading.delete(pool));
    this.loading.set(pool, p);
    return p;
  }
}
