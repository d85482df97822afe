/**
 * The proxies of a sharded pool: each lives on the shard its id is placed on (shard-map.ts), and
 * answers for the pool are made of every shard's.
 */
import type { PoolStats, ProxyAction, ProxyActionResult, ProxySpecInput, ProxyView, HealthResult } from "@proxybroker/sdk/model";
import type { StoreProxies, StoreWorkers } from "@proxybroker/sdk/engine";
import { endpointOf } from "@proxybroker/sdk/model";
import type { Shards } from "./host.js";
import { settleExit, settleHosts } from "./shard-exits.js";
import { assertLayout } from "./layout.js";
import { mergePages, sumStats } from "./merge.js";

/** `items` in their given order, keeping those `keep` holds. */
function inOrder<T>(items: readonly T[], keep: ReadonlySet<T>): T[] {
  return items.filter((i) => keep.has(i));
}

/** The proxies role of sharded pools; `addProxies` and `recordHealth` serve unsharded ones too. */
export class ShardProxies implements StoreProxies {
  constructor(
    private readonly at: Shards,
    /** The pool's live workers, of every shard. */
    private readonly workers: Pick<StoreWorkers, "liveWorkers">,
  ) {}

  /** Ids grouped by the shard of their proxy, each group handed to `call` with its shard's pool name. */
  private async perShard<R>(pool: string, ids: readonly string[], call: (name: string, part: string[]) => Promise<R>): Promise<R[]> {
    const { shards } = this.at;
    const out: R[] = [];
    for (const [i, part] of shards.group(pool, ids, (id) => id)) out.push(await call(shards.name(pool, i), part));
    return out;
  }

  /**
   * Shard 0 first, its layout checked (and recorded) in the same step as its writes, whatever
   * the layout cache says: after a wipe, a broker that had just found the layout right would
   * otherwise import the proxies again without it, and every broker would then refuse the pool
   * as stored unsharded. A layout that is not this broker's writes nothing.
   */
  async addProxies(pool: string, specs: readonly ProxySpecInput[]): Promise<{ added: string[]; updated: string[] }> {
    const { inner, shards } = this.at;
    const mine = shards.count(pool);
    const groups = shards.group(pool, specs, (p) => p.id);
    const first = await inner.addProxiesInLayout(pool, groups.get(0) ?? [], mine);
    assertLayout(pool, mine, first.layout);
    const results: { added: string[]; updated: string[] }[] = [first];
    for (const [i, part] of groups) if (i !== 0) results.push(await inner.addProxies(shards.name(pool, i), part));
    // in the order of the specs; a spec updated under its legacy id (its endpoint) ranks by it too
    const rank = new Map<string, number>();
    specs.forEach((p, i) => {
      if (!rank.has(p.id)) rank.set(p.id, i);
      if (!rank.has(endpointOf(p.id))) rank.set(endpointOf(p.id), i);
    });
    const ordered = (ids: string[]): string[] => ids.sort((a, b) => (rank.get(a) ?? 0) - (rank.get(b) ?? 0));
    const added = results.flatMap((r) => r.added);
    if (mine > 1 && added.length > 0) await settleHosts(this.at, pool, added);
    return {
      added: ordered(added),
      updated: ordered(results.flatMap((r) => r.updated)),
    };
  }

  async removeProxies(pool: string, ids: readonly string[]): Promise<{ removed: string[]; notFound: string[] }> {
    const results = await this.perShard(pool, ids, (name, part) => this.at.inner.removeProxies(name, part));
    const removed = new Set(results.flatMap((r) => r.removed));
    return { removed: inOrder(ids, removed), notFound: ids.filter((id) => !removed.has(id)) };
  }

  async restoreProxies(pool: string, ids: readonly string[]): Promise<{ restored: string[]; notFound: string[] }> {
    const results = await this.perShard(pool, ids, (name, part) => this.at.inner.restoreProxies(name, part));
    const restored = new Set(results.flatMap((r) => r.restored));
    return { restored: inOrder(ids, restored), notFound: ids.filter((id) => !restored.has(id)) };
  }

  async listProxies(pool: string, page: { size: number; after: string }): Promise<{ proxies: ProxyView[]; next: string }> {
    const pages = await Promise.all(this.at.shards.names(pool).map((name) => this.at.inner.listProxies(name, page)));
    return mergePages(pages, page.size);
  }

  async recordHealth(pool: string, id: string, result: HealthResult, term?: number, exitIp?: string): Promise<ProxyView | undefined> {
    const { inner, shards } = this.at;
    const shard = shards.shardOf(pool, id);
    const view = await inner.recordHealthIn(
      { pool: shards.name(pool, shard), auditPool: pool },
      { id, result, term: term ?? 0, exitIp: exitIp ?? "" },
    );
    if (view !== undefined && view.exitIp !== "" && shards.count(pool) > 1)
      await settleExit(this.at, { pool, shard, id, exitIp: view.exitIp });
    return view;
  }

  async proxyAction(pool: string, ids: readonly string[], action: ProxyAction): Promise<ProxyActionResult> {
    const results = await this.perShard(pool, ids, (name, part) => this.at.inner.proxyAction(name, part, action));
    const changed = new Set(results.flatMap((r) => r.changed));
    const unchanged = new Set(results.flatMap((r) => r.unchanged));
    return {
      changed: inOrder(ids, changed),
      unchanged: inOrder(ids, unchanged),
      notFound: ids.filter((id) => !changed.has(id) && !unchanged.has(id)),
    };
  }

  async poolStats(pool: string, liveSinceMs: number): Promise<PoolStats> {
    const stats = await Promise.all(this.at.shards.names(pool).map((name) => this.at.inner.poolStats(name, liveSinceMs)));
    return sumStats(stats, (await this.workers.liveWorkers(pool, liveSinceMs)).length);
  }
}
