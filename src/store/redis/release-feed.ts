/**
 * Internal to the Redis store: the feed of releases made by other replicas. Each release of a
 * live lease is published (SPUBLISH, sharded: it stays in the pool's slot) on `P ev:<dk>` with the
 * releasing store's instance id; this feed subscribes (SSUBSCRIBE) to the channels of the
 * domain-keys watched, on a connection of its own (a subscribed connection runs no other command),
 * and passes on every release but its own store's. A channel no longer watched is unsubscribed a
 * little later, so that a queue that empties and fills again does not churn subscriptions.
 */
import { Cluster } from "ioredis";
import type { Redis } from "ioredis";
import type { ReleaseFeed } from "@proxybroker/sdk/engine";
import type { KeyBuilder } from "./keys.js";
import type { RedisClient } from "./scripts.js";

export interface ReleaseFeedOptions {
  readonly client: RedisClient;
  readonly keys: KeyBuilder;
  /** The payload of this store's own releases (ignored). */
  readonly self: string;
  /** How long a channel stays subscribed after its last `unwatch`. Default 10 s. */
  readonly lingerMs?: number;
}

interface Channel {
  readonly pool: string;
  readonly domainKey: string;
  watchers: number;
  linger: NodeJS.Timeout | undefined;
}

export class RedisReleaseFeed implements ReleaseFeed {
  private subscriber: Redis | Cluster | undefined;
  private readonly channels = new Map<string, Channel>();
  private listener: (pool: string, domainKey: string) => void = () => undefined;
  private closed = false;

  constructor(private readonly opts: ReleaseFeedOptions) {}

  onRelease(listener: (pool: string, domainKey: string) => void): void {
    this.listener = listener;
  }

  watch(pool: string, domainKey: string): void {
    if (this.closed) return;
    const name = this.channelOf(pool, domainKey);
    const found = this.channels.get(name);
    if (found !== undefined) {
      found.watchers++;
      if (found.linger !== undefined) clearTimeout(found.linger);
      found.linger = undefined;
      return;
    }
    this.channels.set(name, { pool, domainKey, watchers: 1, linger: undefined });
    // a subscription that fails (Redis away) is retried by the client when it reconnects
    this.connection()
      .ssubscribe(name)
      .catch(() => undefined);
  }

  unwatch(pool: string, domainKey: string): void {
    const name = this.channelOf(pool, domainKey);
    const ch = this.channels.get(name);
    if (ch === undefined || --ch.watchers > 0) return;
    ch.linger = setTimeout(() => {
      this.channels.delete(name);
      this.subscriber?.sunsubscribe(name).catch(() => undefined);
    }, this.opts.lingerMs ?? 10_000);
    ch.linger.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const ch of this.channels.values()) if (ch.linger !== undefined) clearTimeout(ch.linger);
    this.channels.clear();
    this.subscriber?.disconnect();
    this.subscriber = undefined;
  }

  private channelOf(pool: string, domainKey: string): string {
    return this.opts.keys.pool(pool).releaseChannel(domainKey);
  }

  private connection(): Redis | Cluster {
    if (this.subscriber !== undefined) return this.subscriber;
    const client = this.opts.client;
    // subscriptions wait for the connection (and are renewed after a reconnect)
    const sub =
      client instanceof Cluster
        ? client.duplicate(undefined, { shardedSubscribers: true, enableOfflineQueue: true })
        : client.duplicate({ enableOfflineQueue: true });
    sub.on("error", () => undefined);
    sub.on("smessage", (channel: string, message: string) => {
      if (message === this.opts.self) return;
      const ch = this.channels.get(channel);
      if (ch !== undefined) this.listener(ch.pool, ch.domainKey);
    });
    this.subscriber = sub;
    return sub;
  }
}
