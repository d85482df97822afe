/**
 * The gateway's SDK clients, one per pool a request named (`pool-NAME`): bounded, so that a flood
 * of pool names cannot grow the gateway or leave it listed as a worker in pools it no longer
 * serves. At most `maxPools` at once (beyond: a 400 that names GATEWAY_MAX_POOLS); a pool's client
 * that holds no lease and was not asked for one for `idleMs` is closed — it releases nothing
 * (it holds nothing) and leaves the pool (LeavePool) — and made again when a request names the
 * pool. The gateway's own pool is never closed.
 */
import type { ProxyBrokerClient } from "@proxybroker/sdk";
import { RefusalError } from "./answers.js";

export interface PoolClientsOptions {
  readonly make: (pool: string) => ProxyBrokerClient;
  /** The gateway's pool (GATEWAY_POOL): made at once, never closed for idleness. */
  readonly pool: string;
  readonly maxPools: number;
  readonly idleMs: number;
  readonly clock?: () => number;
}

interface Entry {
  readonly client: ProxyBrokerClient;
  lastUsed: number;
}

export class PoolClients {
  private readonly clients = new Map<string, Entry>();
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: PoolClientsOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  /** The client of `pool`, made when needed; throws a 400 `RefusalError` beyond `maxPools`. */
  get(pool: string): ProxyBrokerClient {
    const had = this.clients.get(pool);
    if (had !== undefined) {
      had.lastUsed = this.clock();
      return had.client;
    }
    if (this.clients.size >= this.opts.maxPools) {
      throw new RefusalError({
        status: 400,
        message: `pool ${pool}: this gateway serves at most ${this.opts.maxPools} pools at once (GATEWAY_MAX_POOLS)`,
        headers: {},
      });
    }
    const client = this.opts.make(pool);
    this.clients.set(pool, { client, lastUsed: this.clock() });
    return client;
  }

  get size(): number {
    return this.clients.size;
  }

  /** Close idle clients every `everyMs` (a tenth of the idle time, at most a minute). */
  start(everyMs = Math.min(60_000, Math.max(50, Math.floor(this.opts.idleMs / 10)))): void {
    this.timer = setInterval(() => void this.sweep(), everyMs);
    this.timer.unref();
  }

  /** Close the clients idle for `idleMs` that hold no lease (not the gateway's own pool). */
  async sweep(): Promise<void> {
    const now = this.clock();
    const idle = [...this.clients].filter(
      ([pool, e]) => pool !== this.opts.pool && now - e.lastUsed >= this.opts.idleMs && e.client.leasesHeld === 0,
    );
    for (const [pool] of idle) this.clients.delete(pool);
    await Promise.all(idle.map(([, e]) => e.client.close().catch(() => undefined)));
  }

  /** Every client, for the shutdown (their leases are released, each pool left). */
  async closeAll(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((e) => e.client.close().catch(() => undefined)));
  }
}
