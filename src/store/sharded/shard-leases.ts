/**
 * The leases of a sharded store. A proxy and everything about it lives in one shard, so G1, G2
 * and G4 are kept by the shard's own atomic scripts. An acquire tries the shards in the rendezvous
 * order of its domain-key (one store step per shard tried), and is denied only when every shard
 * denied it, with the earliest retry-after any of them knew. A sticky session lives on the first
 * shard of its own key's order; an acquire of one proxy goes to that proxy's shard. A lease id
 * names its shard: renewals and releases go there directly. A release with `next` is one step
 * when the next acquire starts on the same shard, else a release and an acquire sent together.
 * Unsharded pools pass straight through.
 */
import type {
  AcquireParams,
  AcquireResult,
  OutcomeReport,
  ReleaseParams,
  ReleaseResult,
  RenewParams,
  RenewResult,
} from "@proxybroker/sdk/model";
import type { StorePolicies, StoreLeases } from "@proxybroker/sdk/engine";
import { decodeLeaseId } from "../redis/lease-id.js";
import { splitVersion } from "./composite.js";
import type { ShardHost, Shards } from "./host.js";
import type { LayoutCache } from "./layout.js";
import type { ShardMap } from "./shard-map.js";

/** What the leases of a sharded store are built from. */
export interface ShardLeasesDeps extends Shards {
  readonly layout: LayoutCache;
  /** The policies of a sharded pool (read after a shard said `stale-policy`). */
  readonly policies: Pick<StorePolicies, "listPolicies">;
  /** A best-effort step failed (spreading a raised interval, abandoning a lease no one got). */
  readonly onError: (what: string, err: unknown) => void;
}

/** `p` for shard pool `pool` under that shard's policy version. */
function onShard(p: AcquireParams, pool: string, policyVersion: string): AcquireParams {
  // a proxy's holds in its isolation groups lie on its own shard, with its pairs
  return { ...p, pool, policyVersion };
}

/** A shard's answer with the pool's own name on its lease. */
function asPool(r: AcquireResult, pool: string): AcquireResult {
  if (r.kind !== "granted") return r;
  return { kind: "granted", lease: { ...r.lease, pool } };
}

/** The earlier of two retry-afters (-1 = unknown). */
function earlier(a: number, b: number): number {
  if (a < 0) return b;
  if (b < 0) return a;
  return Math.min(a, b);
}

export class ShardLeases implements StoreLeases {
  private readonly inner: ShardHost;
  private readonly shards: ShardMap;
  /** Whether any pool has shards (else every lease call passes straight through). */
  private readonly anySharded: boolean;

  constructor(private readonly deps: ShardLeasesDeps) {
    this.inner = deps.inner;
    this.shards = deps.shards;
    this.anySharded = deps.shards.any();
  }

  private sharded(pool: string): boolean {
    return this.shards.count(pool) > 1;
  }

  /** The shards an acquire of `p` may be granted on, in the order to try them. */
  private orderOf(p: AcquireParams): number[] {
    if (p.proxyId !== "") return [this.shards.shardOf(p.pool, p.proxyId)];
    if (p.sessionKey !== "") return this.shards.order(p.pool, `s\x1f${p.sessionKey}`).slice(0, 1);
    return this.shards.order(p.pool, p.domainKey);
  }

  async acquire(params: AcquireParams): Promise<AcquireResult> {
    if (!this.sharded(params.pool)) return this.inner.acquire(params);
    return this.acquireFrom(params, this.orderOf(params), -1);
  }

  /** Try `order`'s shards one after another; `retry` is what shards tried before knew. */
  private async acquireFrom(params: AcquireParams, order: readonly number[], retry: number): Promise<AcquireResult> {
    const { pool } = params;
    const versions = splitVersion(params.policyVersion, this.shards.count(pool));
    for (const i of order) {
      const r = await this.inner.acquire(onShard(params, this.shards.name(pool, i), versions[i] ?? ""));
      if (r.kind === "granted") return asPool(r, pool);
      if (r.kind === "stale-policy") return this.stale(pool);
      retry = earlier(retry, r.retryAfterMs);
    }
    return { kind: "denied", retryAfterMs: retry };
  }

  /** A sharded pool's answer to a stale policy version: the version of all its shards. */
  private async stale(pool: string): Promise<AcquireResult> {
    await this.deps.layout.check(pool);
    return { kind: "stale-policy", version: (await this.deps.policies.listPolicies(pool)).version };
  }

  renew(params: RenewParams): Promise<RenewResult> {
    const isolationOf = params.isolationOf;
    if (isolationOf === undefined) return this.inner.renew(params);
    // the lease names its shard's pool; the policies are the pool's
    return this.inner.renew({
      ...params,
      isolationOf: (storePool, domainKey) => isolationOf(this.shards.parse(storePool).pool, domainKey),
    });
  }

  async release(params: ReleaseParams): Promise<ReleaseResult> {
    const { next, ...bare } = params;
    // (a RATE_LIMITED spreads to the other shards: only when some pool has them)
    const limited = this.anySharded && params.outcome.kind === "RATE_LIMITED";
    if (!limited && (next === undefined || !this.sharded(next.pool))) return this.inner.release(params);
    const lease = decodeLeaseId(params.leaseId);
    const at = lease === undefined ? undefined : this.shards.parse(lease.pool);
    const r =
      next === undefined || !this.sharded(next.pool)
        ? await this.inner.release(params)
        : await this.releaseWithNext(bare, next, lease?.pool, at);
    // a site's limit learned on one shard holds on all of them
    if (limited && lease !== undefined && at !== undefined && this.sharded(at.pool))
      await this.spreadPacing(at.pool, at.shard, lease.domainKey);
    return r;
  }

  /** Release `bare`, then acquire `next` of a sharded pool: one step when it starts on the lease's shard. */
  private async releaseWithNext(
    bare: Omit<ReleaseParams, "next">,
    next: AcquireParams,
    storePool: string | undefined,
    at: { readonly pool: string; readonly shard: number } | undefined,
  ): Promise<ReleaseResult> {
    const order = this.orderOf(next);
    let r: ReleaseResult;
    let answer: AcquireResult;
    if (storePool !== undefined && at !== undefined && at.pool === next.pool && order[0] === at.shard) {
      const versions = splitVersion(next.policyVersion, this.shards.count(next.pool));
      r = await this.inner.release({ ...bare, next: onShard(next, storePool, versions[at.shard] ?? "") });
      const n = r.next ?? { kind: "denied", retryAfterMs: -1 };
      if (n.kind === "granted") answer = asPool(n, next.pool);
      else if (n.kind === "stale-policy") answer = await this.stale(next.pool);
      else answer = await this.acquireFrom(next, order.slice(1), n.retryAfterMs);
    } else {
      // the next acquire starts on another shard, where the lease's proxy is no candidate: both
      // at once (each joins its shard's batch of this turn)
      const [released, acquired] = await Promise.allSettled([this.inner.release(bare), this.acquire(next)]);
      if (released.status === "rejected") {
        // the caller hears of the failed release only: a lease granted meanwhile is given back
        if (acquired.status === "fulfilled") this.abandon(acquired.value);
        throw released.reason;
      }
      if (acquired.status === "rejected") throw acquired.reason;
      r = released.value;
      answer = acquired.value;
    }
    return r.kind === "released" ? { kind: "released", next: answer } : { kind: "lost", reason: r.reason, next: answer };
  }

  /**
   * Raise the other shards' adaptive pacing of `domainKey` to shard `from`'s. Best effort: the
   * outcome itself is applied already, and a shard not raised still paces by the policy and
   * learns the limit itself.
   */
  private async spreadPacing(pool: string, from: number, domainKey: string): Promise<void> {
    try {
      const [pacing] = await this.inner.domainPacing(this.shards.name(pool, from), [domainKey], 1);
      if (pacing === undefined || (pacing.adaptiveMs <= 0 && pacing.learnedMs <= 0)) return;
      const others = this.shards.names(pool).filter((_, i) => i !== from);
      await Promise.all(others.map((name) => this.inner.raisePacing(name, pacing)));
    } catch (err: unknown) {
      this.deps.onError(`spreading the raised interval of ${domainKey} in pool ${pool}`, err);
    }
  }

  /** Give back a lease nobody will use (best effort: else it frees at its TTL). */
  private abandon(r: AcquireResult): void {
    if (r.kind !== "granted") return;
    const outcome = { kind: "ABANDONED", httpStatus: 0, latencyMs: 0, retryAfterMs: 0 } as const;
    this.inner
      .release({ leaseId: r.lease.leaseId, fencingToken: r.lease.fencingToken, outcome })
      .catch((err: unknown) => this.deps.onError(`giving back lease ${r.lease.leaseId}`, err));
  }

  async reportOutcomes(pool: string, reports: readonly OutcomeReport[]): Promise<number> {
    await this.deps.layout.check(pool);
    if (!this.sharded(pool)) return this.inner.reportOutcomes(pool, reports);
    let applied = 0;
    for (const [i, part] of this.shards.group(pool, reports, (r) => r.proxyId)) {
      applied += await this.inner.reportOutcomes(this.shards.name(pool, i), part);
      const limited = new Set(part.filter((r) => r.outcome.kind === "RATE_LIMITED").map((r) => r.domainKey));
      for (const dk of limited) await this.spreadPacing(pool, i, dk);
    }
    return applied;
  }
}
