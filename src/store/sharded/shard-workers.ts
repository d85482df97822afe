/**
 * The workers of a sharded pool: an acquire records its worker on the shard it tried, so reads
 * merge every shard's records; what is put back after a loss goes to shard 0.
 */
import type { DomainUse, Reservations, WorkerHeard, WorkerSeen, WorkerTouch } from "@proxybroker/sdk/model";
import type { StoreWorkers } from "@proxybroker/sdk/engine";
import type { Shards } from "./host.js";
import { mergeDomainUses, mergeWorkers } from "./merge.js";

/** The workers role of sharded pools. */
export class ShardWorkers implements StoreWorkers {
  constructor(private readonly at: Shards) {}

  async liveWorkers(pool: string, sinceMs: number, opts: { readonly claims?: boolean } = {}): Promise<WorkerSeen[]> {
    const { inner, shards } = this.at;
    return mergeWorkers(await Promise.all(shards.names(pool).map((name) => inner.liveWorkers(name, sinceMs, opts))));
  }

  /** Recorded on every shard, so that each one's sweep of ids not seen for a week runs too. */
  async touchWorker(pool: string, workerId: string, touch: WorkerTouch = {}): Promise<void> {
    const { inner, shards } = this.at;
    await Promise.all(shards.names(pool).map((name) => inner.touchWorker(name, workerId, touch)));
  }

  /** On shard 0 only: a ping every second need not write every shard (`liveWorkers` merges every shard's). */
  hearWorker(pool: string, workerId: string, heard: WorkerHeard): Promise<void> {
    return this.at.inner.hearWorker(pool, workerId, heard);
  }

  /** Put back on shard 0 (`liveWorkers` merges every shard's). */
  rememberWorkers(pool: string, workers: readonly WorkerSeen[]): Promise<void> {
    return this.at.inner.rememberWorkers(pool, workers);
  }

  async forgetWorker(pool: string, workerId: string): Promise<boolean> {
    const { inner, shards } = this.at;
    const known = await Promise.all(shards.names(pool).map((name) => inner.forgetWorker(name, workerId)));
    return known.some((k) => k);
  }

  /** A proxy's on its shard; a domain-key's on every shard (any of them may grant its pairs). */
  async reserve(pool: string, reserved: Reservations): Promise<void> {
    const { inner, shards } = this.at;
    const parts = shards.names(pool).map((): Record<string, string> => ({}));
    for (const [id, worker] of Object.entries(reserved.proxies)) {
      const part = parts[shards.shardOf(pool, id)];
      if (part !== undefined) part[id] = worker;
    }
    // every shard, so that one whose reservations all ended is cleared too
    await Promise.all(parts.map((part, i) => inner.reserve(shards.name(pool, i), { ...reserved, proxies: part })));
  }

  /** Every shard's records (an acquire records its use on each shard it tried), merged. */
  async domainUses(pool: string, sinceMs: number): Promise<DomainUse[]> {
    const { inner, shards } = this.at;
    return mergeDomainUses(await Promise.all(shards.names(pool).map((name) => inner.domainUses(name, sinceMs))));
  }

  /** Put back on shard 0 (`domainUses` merges every shard's). */
  rememberDomainUses(pool: string, uses: readonly DomainUse[]): Promise<void> {
    return this.at.inner.rememberDomainUses(pool, uses);
  }
}
