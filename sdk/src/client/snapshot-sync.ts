import type { DomainPacing, ProxyBroker } from "../gen/proxybroker/v1/broker_pb.js";
import type { ClientOf } from "../wire/grpc-adapter.js";
import { durationMs } from "@bufbuild/protobuf/wkt";
import { epochMsOf, policyFromWire, proxyFromWire } from "../wire/codec.js";
import type { FallbackPool, PoolSnapshot } from "../fallback/index.js";

/** Beyond a membership refresh period, how long a worker waits before others surely know of it. */
const KNOWN_SLACK_MS = 1_000;

/** How `SnapshotSync` keeps the fallback pool fed. */
export interface SnapshotSyncOptions {
  readonly broker: ClientOf<typeof ProxyBroker>;
  readonly pool: string;
  /** This worker: the broker records it as live at every refresh. */
  readonly workerId: string;
  readonly fallback: FallbackPool;
  /** The whole snapshot (proxies, policies, pacing) this often. */
  readonly refreshMs: number;
  /** The live workers (the rendezvous set of the shares) this often. */
  readonly membershipRefreshMs: number;
  readonly callTimeoutMs: number;
  /** Refreshes run only while the broker is healthy (the caller says when it is not). */
  readonly healthy: () => boolean;
  /** The broker answered a refresh (it is reachable). */
  readonly onContact?: () => void;
  readonly monotonic: () => number;
}

/**
 * Keeps the fallback pool fed: the whole `GetPoolSnapshot` now and every `refreshMs`, and the
 * live workers alone every `membershipRefreshMs`, while the broker is healthy. Each call names
 * this worker, so the broker counts it as live even when it holds long leases and rarely
 * acquires: every worker then computes its share over the same workers, which is what keeps the
 * shares of workers in fallback apart.
 */
export class SnapshotSync {
  private timers: NodeJS.Timeout[] = [];
  private inFlight: Promise<boolean> | undefined;
  /** Broker calls in flight. */
  private readonly calls = new Set<Promise<unknown>>();
  private failure: unknown;
  /** Monotonic ms when a worker without fallback pool was last listed (-∞: never; undefined: no list yet). */
  private mixedAt: number | undefined;
  /** Monotonic ms since when every membership this worker received listed it (undefined: not listed). */
  private listedSince: number | undefined;
  /** Monotonic ms of the latest membership that listed this worker. */
  private lastListedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly opts: SnapshotSyncOptions) {}

  /**
   * Every other worker has had time to learn of this one: memberships that listed it were fetched
   * over a membership refresh period and a second, the broker answering all along. Before that,
   * some may compute their fallback shares without it, and its own share could collide with
   * theirs. Time alone is not enough: when the broker went away right after this worker was first
   * listed, the others' refreshes failed too and their lists still lack it.
   */
  get known(): boolean {
    return this.listedSince !== undefined && this.lastListedAt - this.listedSince >= this.opts.membershipRefreshMs + KNOWN_SLACK_MS;
  }

  /** Why the last membership refresh failed. */
  get lastError(): unknown {
    return this.failure;
  }

  start(): void {
    void this.refresh();
    const every = (ms: number, fn: () => Promise<unknown>): void => {
      const t = setInterval(() => {
        if (this.opts.healthy()) void fn();
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    every(this.opts.refreshMs, () => this.refresh());
    every(this.opts.membershipRefreshMs, () => this.refreshWorkers());
  }

  /** Stop refreshing; resolves when the calls in flight have settled (each has its deadline). */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await Promise.allSettled([...this.calls]);
  }

  /** Run `call`, tracked until it settles (see `stop`). */
  private track<T>(call: Promise<T>): Promise<T> {
    this.calls.add(call);
    void call.finally(() => this.calls.delete(call)).catch(() => undefined);
    return call;
  }

  /** Fetch and use a whole snapshot now; resolves false when the broker did not answer. */
  refresh(): Promise<boolean> {
    this.inFlight ??= this.fetch().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  /** Fetch the live workers and rebuild the share over them; false when the broker did not answer. */
  async refreshWorkers(): Promise<boolean> {
    try {
      const res = await this.track(
        this.opts.broker.getPoolSnapshot({ pool: this.opts.pool, workerId: this.opts.workerId, workersOnly: true }, { deadline: this.opts.callTimeoutMs }),
      );
      this.opts.onContact?.();
      this.listed(res.liveWorkers.map((w) => w.workerId), res.liveWorkers.filter((w) => !w.fallbackPool).length);
      await this.opts.fallback
        .useMembership({
          workers: res.liveWorkers.map((w) => w.workerId),
          pacing: pacingOf(res.pacing),
          ...(res.longestTtl !== undefined ? { longestTtlMs: durationMs(res.longestTtl) } : {}),
          ...(res.fallbackWindow !== undefined ? { fallbackWindowMs: durationMs(res.fallbackWindow) } : {}),
          workersWithoutFallback: res.liveWorkers.filter((w) => !w.fallbackPool).length,
        })
        .catch(() => undefined);
      return true;
    } catch (err) {
      this.failure = err;
      return false;
    }
  }

  /**
   * A live worker without a fallback pool (Python, raw stubs) was listed within the last `ms`, or
   * no membership has arrived yet: such workers keep their broker leases to the end when the
   * broker fails. Sticky, since one membership can miss them (right after Redis lost its data).
   */
  mixedWithin(ms: number): boolean {
    return this.mixedAt === undefined || this.opts.monotonic() - this.mixedAt < ms;
  }

  private listed(workers: readonly string[], withoutFallback = 0): void {
    if (withoutFallback > 0 || this.mixedAt === undefined) this.mixedAt = withoutFallback > 0 ? this.opts.monotonic() : Number.NEGATIVE_INFINITY;
    if (!workers.includes(this.opts.workerId)) {
      this.listedSince = undefined;
      return;
    }
    this.lastListedAt = this.opts.monotonic();
    this.listedSince ??= this.lastListedAt;
  }

  private async fetch(): Promise<boolean> {
    try {
      const res = await this.track(this.opts.broker.getPoolSnapshot({ pool: this.opts.pool, workerId: this.opts.workerId }, { deadline: this.opts.callTimeoutMs }));
      this.opts.onContact?.();
      this.listed(res.liveWorkers.map((w) => w.workerId), res.liveWorkers.filter((w) => !w.fallbackPool).length);
      const pacing = pacingOf(res.pacing);
      const snap: PoolSnapshot = {
        pool: res.pool,
        proxies: res.proxies.map(proxyFromWire),
        liveWorkers: res.liveWorkers.map((w) => w.workerId),
        policies: res.policies.map(policyFromWire),
        pacing,
        ...(res.longestTtl !== undefined ? { longestTtlMs: durationMs(res.longestTtl) } : {}),
        ...(res.fallbackWindow !== undefined ? { fallbackWindowMs: durationMs(res.fallbackWindow) } : {}),
        workersWithoutFallback: res.liveWorkers.filter((w) => !w.fallbackPool).length,
        takenAt: epochMsOf(res.snapshotTime),
      };
      await this.opts.fallback.useSnapshot(snap).catch(() => undefined); // a failed file write keeps the pool
      return true;
    } catch {
      return false;
    }
  }
}

/** The broker's adaptive intervals by domain-key (ms). */
function pacingOf(list: readonly DomainPacing[]): Record<string, number> {
  const pacing: Record<string, number> = {};
  for (const d of list) pacing[d.domain] = d.effectiveInterval === undefined ? 0 : durationMs(d.effectiveInterval);
  return pacing;
}
