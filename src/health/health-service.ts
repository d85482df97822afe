/**
 * The health checker across broker replicas: every replica with a check URL campaigns for the
 * leader lease "health-check"; the one that holds it runs a round every interval (and one at
 * once when it takes over), its results fenced by its term; the others stand by and take over
 * within one lease TTL when the leader dies. Any replica runs a manual pass
 * (ProxyAdmin.CheckProxies). A leader change is an event of every pool checked.
 */
import type { Campaign, StoreEvents, StoreLeader, StoreProxies } from "@proxybroker/sdk/engine";
import type { CheckProgressUpdate } from "./pass.js";
import type { HealthChecker } from "./checker.js";
import { LeaderElector } from "./leader.js";

export interface HealthServiceOptions {
  readonly store: StoreProxies & StoreLeader & StoreEvents;
  readonly checker: HealthChecker;
  /** This replica's id (the lease's holder). */
  readonly owner: string;
  readonly leaderTtlMs: number;
  readonly intervalMs: number;
  readonly onLeader?: (state: Campaign) => void;
  readonly onError?: (err: unknown) => void;
}

export const LEADER_NAME = "health-check";

export class HealthService {
  private readonly elector: LeaderElector;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private abort: AbortController | undefined;

  constructor(private readonly opts: HealthServiceOptions) {
    this.elector = new LeaderElector({
      store: opts.store,
      name: LEADER_NAME,
      owner: opts.owner,
      ttlMs: opts.leaderTtlMs,
      onChange: (c) => this.leaderChanged(c),
      ...(opts.onError === undefined ? {} : { onError: opts.onError }),
    });
  }

  /** Whether this replica runs the rounds now. */
  get leader(): boolean {
    return this.elector.leader;
  }

  /** The leader term of this replica's checks (0 when it does not lead). */
  get term(): number {
    return this.elector.leader ? this.elector.term : 0;
  }

  start(): void {
    this.elector.start();
    this.timer = setInterval(() => this.round(), this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.abort?.abort();
    await this.elector.stop();
  }

  /** A manual pass over every proxy of `pool` (not fenced: an operator asked for it). */
  pass(pool: string, onProgress: (p: CheckProgressUpdate) => void, signal: AbortSignal): Promise<CheckProgressUpdate> {
    return this.opts.checker.pass(pool, { all: true, onProgress, signal });
  }

  /**
   * Probe proxies just added to `pool` at once (their exit IP, G9), under this replica's term
   * when it leads (else not fenced, as a manual pass); errors reported.
   */
  checkNew(pool: string, ids: readonly string[]): void {
    if (!this.opts.checker.pools.includes(pool)) return;
    this.opts.checker.pass(pool, { term: this.term, only: new Set(ids) }).catch((err: unknown) => this.opts.onError?.(err));
  }

  private round(): void {
    if (!this.elector.leader || this.running !== undefined) return;
    const abort = new AbortController();
    this.abort = abort;
    this.running = this.opts.checker
      .round({ term: this.elector.term, signal: abort.signal })
      .catch((err: unknown) => this.opts.onError?.(err))
      .finally(() => (this.running = undefined));
  }

  private leaderChanged(c: Campaign): void {
    this.opts.onLeader?.(c);
    if (!c.leader) {
      this.abort?.abort();
      return;
    }
    const detail = `${this.opts.owner} checks (term ${c.term})`;
    for (const pool of this.opts.checker.pools) {
      this.opts.store
        .appendEvent(pool, { kind: "LEADER", proxyId: "", domainKey: "", detail })
        .catch((err: unknown) => this.opts.onError?.(err));
    }
    this.round();
  }
}
