/**
 * The upstream connections of intercepted requests, kept alive per (proxy, site) between leases
 * of that pair (docs/gateway.md): a lease is exclusive per (proxy, domain-key), so the next lease
 * of the pair — and only it — reuses the tunnel through the proxy and the TLS session to the site,
 * instead of paying a new CONNECT and handshake each time. A pair's agent that carried a request
 * which failed, timed out or was cut (its lease lost, its client gone) is destroyed rather than
 * kept: its connection may still be busy. Idle agents are closed after `idleMs`; at most `max`.
 */
import type { Dispatcher } from "undici";

export interface UpstreamAgentsOptions {
  /** Make the agent of a proxy (its TLS trust included). */
  readonly make: (proxyUrl: string) => Dispatcher;
  readonly idleMs: number;
  readonly max: number;
  readonly clock?: () => number;
}

interface Kept {
  readonly agent: Dispatcher;
  lastUsed: number;
}

export class UpstreamAgents {
  private readonly kept = new Map<string, Kept>();
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: UpstreamAgentsOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  /** The agent of (proxy, origin), kept from the pair's last lease or made now. */
  get(proxyUrl: string, origin: string): Dispatcher {
    const key = `${proxyUrl}\n${origin}`;
    const had = this.kept.get(key);
    if (had !== undefined) {
      this.kept.delete(key); // most recently used last
      this.kept.set(key, had);
      had.lastUsed = this.clock();
      return had.agent;
    }
    const agent = this.opts.make(proxyUrl);
    this.kept.set(key, { agent, lastUsed: this.clock() });
    while (this.kept.size > this.opts.max) {
      const [oldest, k] = this.kept.entries().next().value ?? [];
      if (oldest === undefined || k === undefined) break;
      this.kept.delete(oldest);
      void k.agent.destroy().catch(() => undefined);
    }
    return agent;
  }

  /** The pair's request did not end cleanly: its agent is destroyed, the next lease makes another. */
  discard(proxyUrl: string, origin: string): void {
    const key = `${proxyUrl}\n${origin}`;
    const had = this.kept.get(key);
    if (had === undefined) return;
    this.kept.delete(key);
    void had.agent.destroy().catch(() => undefined);
  }

  get size(): number {
    return this.kept.size;
  }

  start(): void {
    this.timer = setInterval(() => this.sweep(), Math.max(100, Math.floor(this.opts.idleMs / 2)));
    this.timer.unref();
  }

  /** Close the agents idle for `idleMs`. */
  sweep(): void {
    const now = this.clock();
    for (const [key, k] of this.kept) {
      if (now - k.lastUsed < this.opts.idleMs) continue;
      this.kept.delete(key);
      void k.agent.close().catch(() => undefined);
    }
  }

  async closeAll(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    const all = [...this.kept.values()];
    this.kept.clear();
    await Promise.all(all.map((k) => k.agent.destroy().catch(() => undefined)));
  }
}
