import type { DomainPacing, GetPoolSnapshotResponse, ProxyBroker, WorkerInfo } from "../gen/proxybroker/v1/broker_pb.js";
import type { ClientOf } from "../wire/grpc-adapter.js";
import { durationMs } from "@bufbuild/protobuf/wkt";
import { epochMsOf, policyFromWire, proxyFromWire, timestampOf } from "../wire/codec.js";
import type { DomainListing, FallbackPool, PoolSnapshot } from "../fallback/index.js";

/** Beyond a membership refresh period, how long a worker waits before others surely know of it. */
export const KNOWN_SLACK_MS = 1_000;
/**
 * After leasing for a domain-key the lists do not name it with yet, a membership is fetched this
 * soon (the broker lists uses as it read them at most a second before) …
 */
const NEW_DOMAIN_REFRESH_MS = 1_100;
/** … but not more often than this. */
const NEW_DOMAIN_REFRESH_EVERY_MS = 1_000;

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
  /** A membership list arrived and is in use (`known` and the fallback pool's domain-keys may have changed). */
  readonly onListed?: () => void;
  readonly monotonic: () => number;
  /** The fallback pool's clock (epoch ms), to convert its moments into timers. */
  readonly clock: () => number;
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
  /** Monotonic ms when a worker that yields its leases was last listed (-∞: never). */
  private yieldingAt = Number.NEGATIVE_INFINITY;
  /** Monotonic ms since when every membership this worker received listed it (undefined: not listed). */
  private listedSince: number | undefined;
  /** Monotonic ms of the latest membership that listed this worker. */
  private lastListedAt = Number.NEGATIVE_INFINITY;
  /** The one membership refresh due when `known`, or a domain-key's listing, can first become true. */
  private knownCheck: NodeJS.Timeout | undefined;
  private knownCheckAt = Number.POSITIVE_INFINITY;
  /** A membership refresh for a domain-key just leased (see `leased`), and when the last one was due. */
  private newDomainCheck: NodeJS.Timeout | undefined;
  private newDomainAt = Number.NEGATIVE_INFINITY;
  private stopped = false;
  /**
   * The snapshot time (the broker's clock) of the latest list with domain-keys the fallback pool
   * took in; 0: none. Every fetch says it: the broker may then assume this worker's lists show
   * every listing older than that (src/lease/list-lags.ts), and reserve less for it.
   */
  private listsTime = 0;
  /** The policy version of the latest whole snapshot taken in ("" = none, or a broker that sends none). */
  private policyVersion = "";

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
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    if (this.knownCheck !== undefined) clearTimeout(this.knownCheck);
    if (this.newDomainCheck !== undefined) clearTimeout(this.newDomainCheck);
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
        this.opts.broker.getPoolSnapshot({ ...this.request(), workersOnly: true }, { deadline: this.opts.callTimeoutMs }),
      );
      this.opts.onContact?.();
      this.listed(res.liveWorkers);
      // the policies changed since the whole snapshot: fetch it again (a fallback pool must pace
      // by the policies the broker enforces, not by those of up to a refresh period ago)
      if (res.policyVersion !== "" && res.policyVersion !== this.policyVersion) void this.refresh();
      const applied = await this.opts.fallback
        .useMembership({
          workers: sharers(res.liveWorkers),
          pacing: pacingOf(res.pacing),
          ...(res.longestTtl !== undefined ? { longestTtlMs: durationMs(res.longestTtl) } : {}),
          ...(res.fallbackWindow !== undefined ? { fallbackWindowMs: durationMs(res.fallbackWindow) } : {}),
          workersWithoutFallback: keepingLeases(res.liveWorkers),
          ...(res.domainsListed ? { domains: domainsOf(res.liveWorkers) } : {}),
          ...silenceOf(res),
        })
        .then(
          () => true,
          () => false,
        );
      if (applied && res.domainsListed) this.listsTime = Math.max(this.listsTime, epochMsOf(res.snapshotTime));
      this.opts.onListed?.();
      this.checkDomainsLater();
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

  /** A worker that yields its leases (the Python client) was listed within the last `ms`. */
  yieldingWithin(ms: number): boolean {
    return this.opts.monotonic() - this.yieldingAt < ms;
  }

  private listed(live: readonly WorkerInfo[]): void {
    const workers = live.map((w) => w.workerId);
    const withoutFallback = keepingLeases(live);
    if (withoutFallback > 0 || this.mixedAt === undefined)
      this.mixedAt = withoutFallback > 0 ? this.opts.monotonic() : Number.NEGATIVE_INFINITY;
    if (live.some((w) => w.yieldsLeases && w.workerId !== this.opts.workerId)) this.yieldingAt = this.opts.monotonic();
    if (!workers.includes(this.opts.workerId)) {
      this.listedSince = undefined;
    } else {
      this.lastListedAt = this.opts.monotonic();
      if (this.listedSince === undefined) {
        this.listedSince = this.lastListedAt;
        this.checkKnownAt(this.listedSince + this.opts.membershipRefreshMs + KNOWN_SLACK_MS);
      }
    }
  }

  /**
   * Fetch a membership at `at` (monotonic ms): the earliest moment `known` can turn true. The
   * periodic refresh alone would come up to a whole period later.
   */
  private checkKnownAt(at: number): void {
    if (this.knownCheck !== undefined && this.knownCheckAt <= at) return;
    if (this.knownCheck !== undefined) clearTimeout(this.knownCheck);
    this.knownCheckAt = at;
    this.knownCheck = setTimeout(
      () => {
        this.knownCheck = undefined;
        this.knownCheckAt = Number.POSITIVE_INFINITY;
        if (this.stopped || !this.opts.healthy()) return;
        void this.refreshWorkers();
      },
      Math.max(0, at - this.opts.monotonic()) + 1,
    );
    this.knownCheck.unref();
  }

  /** A listing of this worker for a domain-key becomes usable with a list fetched then: fetch one. */
  private checkDomainsLater(): void {
    const at = this.opts.fallback.nextDomainReadyAt();
    if (at === undefined) return;
    // the pool counts in its clock; the timer in the monotonic one: convert by the distance
    this.checkKnownAt(this.opts.monotonic() + Math.max(0, at - this.opts.clock()));
  }

  /**
   * This worker leased a proxy for `domainKey` from the broker: when the lists do not name it with
   * that domain-key yet, fetch one shortly (the broker recorded the use with the grant), so that
   * the listing's membership period starts now rather than at the next periodic refresh.
   */
  leased(domainKey: string): void {
    if (this.stopped || this.newDomainCheck !== undefined || !this.opts.fallback.awaitsListing(domainKey)) return;
    const at = Math.max(this.opts.monotonic() + NEW_DOMAIN_REFRESH_MS, this.newDomainAt + NEW_DOMAIN_REFRESH_EVERY_MS);
    this.newDomainCheck = setTimeout(() => {
      this.newDomainCheck = undefined;
      this.newDomainAt = this.opts.monotonic();
      if (!this.stopped && this.opts.healthy()) void this.refreshWorkers();
    }, at - this.opts.monotonic());
    this.newDomainCheck.unref();
  }

  /** What every fetch says: the pool, this worker, and the latest list it holds. */
  private request(): { pool: string; workerId: string; listsTime?: ReturnType<typeof timestampOf> } {
    return {
      pool: this.opts.pool,
      workerId: this.opts.workerId,
      ...(this.listsTime > 0 ? { listsTime: timestampOf(this.listsTime) } : {}),
    };
  }

  private async fetch(): Promise<boolean> {
    try {
      const res = await this.track(this.opts.broker.getPoolSnapshot(this.request(), { deadline: this.opts.callTimeoutMs }));
      this.opts.onContact?.();
      this.listed(res.liveWorkers);
      const pacing = pacingOf(res.pacing);
      const snap: PoolSnapshot = {
        pool: res.pool,
        proxies: res.proxies.map(proxyFromWire),
        liveWorkers: sharers(res.liveWorkers),
        policies: res.policies.map(policyFromWire),
        pacing,
        ...(res.longestTtl !== undefined ? { longestTtlMs: durationMs(res.longestTtl) } : {}),
        ...(res.fallbackWindow !== undefined ? { fallbackWindowMs: durationMs(res.fallbackWindow) } : {}),
        workersWithoutFallback: keepingLeases(res.liveWorkers),
        ...(res.domainsListed ? { domains: domainsOf(res.liveWorkers) } : {}),
        ...silenceOf(res),
        takenAt: epochMsOf(res.snapshotTime),
      };
      // a failed file write keeps the pool
      const applied = await this.opts.fallback.useSnapshot(snap).then(
        () => true,
        () => false,
      );
      if (applied && res.domainsListed) this.listsTime = Math.max(this.listsTime, snap.takenAt);
      if (applied) this.policyVersion = res.policyVersion;
      this.opts.onListed?.();
      this.checkDomainsLater();
      return true;
    } catch {
      return false;
    }
  }
}

/**
 * The live workers fallback shares are cut over: those that keep a fallback pool. A worker without
 * one (the Python client, raw stubs) never leases in fallback: a share of its own would only
 * leave proxies unused there, and rendezvous shares stay disjoint among the workers that count
 * (each of two workers in fallback lists the other).
 */
function sharers(workers: readonly WorkerInfo[]): string[] {
  return workers.filter((w) => w.fallbackPool).map((w) => w.workerId);
}

/** Live workers that keep their broker leases to their end when the broker fails (no fallback pool, not yielding). */
function keepingLeases(workers: readonly WorkerInfo[]): number {
  return workers.filter((w) => !w.fallbackPool && !w.yieldsLeases).length;
}

/** Each live worker's domain-key listings. */
function domainsOf(workers: readonly WorkerInfo[]): Record<string, DomainListing[]> {
  const out: Record<string, DomainListing[]> = {};
  for (const w of workers) {
    out[w.workerId] = w.domains.map((d) => ({
      domainKey: d.domain,
      listedForMs: d.listedFor === undefined ? 0 : durationMs(d.listedFor),
      expiresInMs: d.expiresIn === undefined ? 0 : durationMs(d.expiresIn),
    }));
  }
  return out;
}

/** When the broker counts a worker silent, and how often it reserves (absent from an older broker). */
function silenceOf(res: GetPoolSnapshotResponse): { workerAbsentAfterMs?: number; reserveIntervalMs?: number } {
  return {
    ...(res.workerAbsentAfter !== undefined ? { workerAbsentAfterMs: durationMs(res.workerAbsentAfter) } : {}),
    ...(res.reserveInterval !== undefined ? { reserveIntervalMs: durationMs(res.reserveInterval) } : {}),
  };
}

/** The broker's adaptive intervals by domain-key (ms). */
function pacingOf(list: readonly DomainPacing[]): Record<string, number> {
  const pacing: Record<string, number> = {};
  for (const d of list) pacing[d.domain] = d.effectiveInterval === undefined ? 0 : durationMs(d.effectiveInterval);
  return pacing;
}
