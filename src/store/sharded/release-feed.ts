/** The release feed of a sharded store: a watch covers every shard of the pool (see shard-map.ts). */
import type { ReleaseFeed } from "@proxybroker/sdk/engine";
import type { ShardMap } from "./shard-map.js";

export class ShardedReleaseFeed implements ReleaseFeed {
  constructor(
    private readonly inner: ReleaseFeed,
    private readonly shards: ShardMap,
  ) {}

  watch(pool: string, domainKey: string): void {
    for (const name of this.shards.names(pool)) this.inner.watch(name, domainKey);
  }

  unwatch(pool: string, domainKey: string): void {
    for (const name of this.shards.names(pool)) this.inner.unwatch(name, domainKey);
  }

  onRelease(listener: (pool: string, domainKey: string) => void): void {
    this.inner.onRelease((storePool, domainKey) => listener(this.shards.parse(storePool).pool, domainKey));
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
