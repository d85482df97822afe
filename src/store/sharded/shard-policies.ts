/**
 * The domain policies of a sharded pool. Each shard keeps a copy and checks the policy version of
 * every acquire against its own, so a write goes to every shard: shard 0 first, then the others,
 * each tried a few times. A read takes the copy of the shard that has seen the most writes (its
 * version counter is highest: a shard that lost its state starts again from 0), and rewrites any
 * copy that differs from it — after a write that failed part-way, or a shard's loss of state —
 * which also bumps that shard's version, so brokers still holding the old one reload. Adaptive
 * pacing is learned per shard (a release spreads a raised interval to the others); a read merges
 * every shard's.
 */
import type { DomainPacing, DomainPolicySpec, PolicySet } from "@proxybroker/sdk/model";
import type { StorePolicies } from "@proxybroker/sdk/engine";
import { joinEpochs, joinVersions } from "./composite.js";
import { mergePacing } from "./merge.js";
import type { ShardMap } from "./shard-map.js";

/** Attempts of one shard's write before the write fails. */
const ATTEMPTS = 3;
const PAUSE_MS = 50;

/** `fn`, tried up to ATTEMPTS times. */
async function retried<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err: unknown) {
      if (i >= ATTEMPTS) throw err;
      await new Promise((r) => setTimeout(r, PAUSE_MS * i));
    }
  }
}

/** The version counter of a shard's policy version `<epoch>.<counter>`. */
function counterOf(version: string): number {
  const n = Number(version.slice(version.lastIndexOf(".") + 1));
  return Number.isFinite(n) ? n : 0;
}

/** A policy list compared by content. */
function contentOf(set: PolicySet): string {
  return JSON.stringify([...set.policies].sort((a, b) => (a.pattern < b.pattern ? -1 : a.pattern > b.pattern ? 1 : 0)));
}

/** The policies role of sharded pools. */
export class ShardPolicies implements StorePolicies {
  constructor(
    private readonly inner: StorePolicies,
    private readonly shards: ShardMap,
  ) {}

  async setPolicy(pool: string, policy: DomainPolicySpec): Promise<void> {
    for (const name of this.shards.names(pool)) await retried(() => this.inner.setPolicy(name, policy));
  }

  async deletePolicy(pool: string, pattern: string): Promise<boolean> {
    let deleted = false;
    for (const name of this.shards.names(pool)) deleted = (await retried(() => this.inner.deletePolicy(name, pattern))) || deleted;
    return deleted;
  }

  /** The pool's policies (the most advanced shard's) with the version and epoch of all shards. */
  async listPolicies(pool: string): Promise<PolicySet> {
    const names = this.shards.names(pool);
    let sets = await Promise.all(names.map((name) => this.inner.listPolicies(name)));
    const reference = this.reference(sets);
    const lagging = names.filter((_, i) => sets[i] !== undefined && contentOf(sets[i]!) !== contentOf(reference));
    if (lagging.length > 0) {
      for (const name of lagging) await this.copy(reference, sets[names.indexOf(name)]!, name);
      sets = await Promise.all(names.map((name) => this.inner.listPolicies(name)));
    }
    const home = this.reference(sets);
    return {
      version: joinVersions(sets.map((s) => s.version)),
      epoch: joinEpochs(sets.map((s) => s.epoch)),
      policies: home.policies,
      history: home.history,
      proxies: sets.reduce((n, s) => n + s.proxies, 0),
    };
  }

  async domainPacing(pool: string, domainKeys: readonly string[], limit: number): Promise<DomainPacing[]> {
    const lists = await Promise.all(this.shards.names(pool).map((name) => this.inner.domainPacing(name, domainKeys, limit)));
    return mergePacing(lists, domainKeys, limit);
  }

  /** The set of the shard with the highest version counter (the lowest such shard). */
  private reference(sets: readonly PolicySet[]): PolicySet {
    let best = sets[0];
    for (const s of sets) if (best === undefined || counterOf(s.version) > counterOf(best.version)) best = s;
    if (best === undefined) throw new Error("a sharded pool without shards");
    return best;
  }

  /** Make shard `name`'s copy (`had`) equal to `reference`'s. */
  private async copy(reference: PolicySet, had: PolicySet, name: string): Promise<void> {
    const keep = new Set(reference.policies.map((p) => p.pattern));
    for (const p of had.policies) if (!keep.has(p.pattern)) await this.inner.deletePolicy(name, p.pattern);
    for (const p of reference.policies) await this.inner.setPolicy(name, p);
  }
}
