/**
 * The event stream of a sharded pool: every shard has its own (an event is written where it
 * happened), and a read merges them (merge.ts) under a cursor made of every shard's (composite.ts).
 */
import type { NewPoolEvent, PoolEvent } from "@proxybroker/sdk/model";
import type { StoreEvents } from "@proxybroker/sdk/engine";
import { splitCursor } from "./composite.js";
import type { Shards } from "./host.js";
import { mergeEvents } from "./merge.js";

/** The pool events of sharded pools (the audit trail is no pool's: the inner store keeps it). */
export class ShardEvents implements Pick<StoreEvents, "appendEvent" | "readEvents"> {
  constructor(
    private readonly at: Shards,
    /** The longest stretch one blocked read waits on every shard before it looks again. */
    private readonly roundMs: number,
  ) {}

  /** On shard 0. */
  appendEvent(pool: string, event: NewPoolEvent): Promise<void> {
    return this.at.inner.appendEvent(pool, event);
  }

  /**
   * Every shard's events merged. With nothing new, a blocked read waits in rounds of at most
   * `roundMs` on all shards at once: an event on any of them ends the wait at the end of its round.
   */
  async readEvents(
    pool: string,
    after: string,
    opts: { readonly count: number; readonly blockMs: number },
  ): Promise<{ events: PoolEvent[]; cursor: string }> {
    const names = this.at.shards.names(pool);
    let from = splitCursor(after, names.length);
    const deadline = Date.now() + Math.max(0, opts.blockMs);
    let blockMs = 0;
    for (;;) {
      const at = from;
      const startedAt = Date.now();
      const reads = await Promise.all(names.map((name, i) => this.at.inner.readEvents(name, at[i] ?? "$", { count: opts.count, blockMs })));
      const merged = mergeEvents(at, reads, opts.count);
      if (merged.events.length > 0 || deadline - Date.now() <= 0) return merged;
      // a round that came back early with nothing (no blocking connection was free) waits out its
      // length: no busy loop
      const early = blockMs - (Date.now() - startedAt);
      if (early > 0) await new Promise((r) => setTimeout(r, Math.min(early, deadline - Date.now())));
      from = splitCursor(merged.cursor, names.length);
      blockMs = Math.max(1, Math.min(this.roundMs, deadline - Date.now()));
    }
  }
}
