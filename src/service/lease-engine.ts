import { StoreUnavailableError } from "@proxybroker/sdk/engine";
import type { PolicyDefaults } from "@proxybroker/sdk/model";
import type { AcquireParams, AcquireResult, LeaseView, LostReasonName, PolicySet, RenewResult } from "@proxybroker/sdk/model";
import type { LeaseStore, ReleaseFeed } from "@proxybroker/sdk/engine";
import { HostPolicies } from "./host-policies.js";
import { LeaseIndex } from "./lease-index.js";
import { PolicyCache } from "./policy-cache.js";
import type { AcquireSpec, ReleaseSpec, RenewSpec } from "./validate.js";
import { WaitQueues } from "./wait-queues.js";
import type { AttemptResult, Refusal } from "./wait-queues.js";
import { BrokerError } from "./errors.js";
import { status } from "@grpc/grpc-js";

/** The answer to an acquire: a lease, or a denial with the earliest known retry moment. */
export type Decision =
  | { readonly kind: "granted"; readonly lease: LeaseView }
  | { readonly kind: "denied"; readonly retryAfterMs: number };

/** The answer to a release: released or lost, and the decision on `next` when it was given. */
export interface ReleaseDecision {
  readonly kind: "released" | "lost";
  readonly reason?: LostReasonName;
  readonly next?: Decision;
}

export interface LeaseEngineOptions {
  readonly store: LeaseStore;
  readonly defaults: PolicyDefaults;
  readonly sessionTtlMs: number;
  readonly waitPollMs: number;
  /** The longest lease TTL accepted: the most that grants are held after a loss of state. */
  readonly ttlMaxMs: number;
  /** Most acquires waiting per (pool, domain-key) and in all; more are refused (RESOURCE_EXHAUSTED). */
  readonly maxWaitingPerKey?: number;
  readonly maxWaiting?: number;
  /** The store lost a pool's state (for re-seeding its proxies). */
  readonly onStateLost?: (pool: string) => void;
  readonly clock?: () => number;
  /** A renewing worker seen since then stays live (see `RenewParams.liveSince`); default 0. */
  readonly liveSince?: () => number;
  /**
   * Runs once per pool before its first grant by this broker (a restarted broker reserves the
   * shares of workers that may be in fallback before it grants anything).
   */
  readonly beforeFirstUse?: (pool: string) => Promise<void>;
  /** A store call failed as unreachable (see `watched`). */
  readonly onStoreDown?: () => void;
  /** The store's server changed (restart, failover): grants are being held (for the log). */
  readonly onServerChanged?: (id: string) => void;
  /** Releases through other replicas (the store's feed): waiting acquires are tried at once. */
  readonly releases?: ReleaseFeed;
  /** An acquire that waited (max_wait) was answered after `ms`: granted or not. */
  readonly onWaited?: (ms: number, granted: boolean) => void;
}

const MAX_POLICY_RELOADS = 3;

/**
 * The broker's lease logic above the store: resolves policies into domain-keys, keeps waiting
 * acquires (G6) in fair queues, and wakes them when this broker sees a release. One store step per
 * operation; the only extra step is a policy reload after the store said `stale-policy`.
 */
export class LeaseEngine {
  private readonly store: LeaseStore;
  private readonly policies: PolicyCache;
  private readonly clock: () => number;
  private readonly index: LeaseIndex;
  private readonly queues: WaitQueues<LeaseView>;
  /** The longest TTL this broker granted or renewed: what a loss of state may have left running. */
  private longestTtlMs: number;
  /** `beforeFirstUse` per pool: running (its promise), or done (true) until invalidated. */
  private readonly used = new Map<string, Promise<void> | true>();
  private readonly hosts: HostPolicies;
  /** The store's server id as last seen (undefined: not yet). */
  private server: string | undefined;
  /** Set when a store call failed as unreachable: the server is checked before the next grant. */
  private verifyServer = false;
  private checking: Promise<void> | undefined;

  /** The longest TTL this broker granted or renewed (at least the default TTL). */
  get longestTtl(): number {
    return Math.min(this.opts.ttlMaxMs, this.longestTtlMs);
  }

  constructor(private readonly opts: LeaseEngineOptions) {
    this.store = opts.store;
    this.policies = new PolicyCache(opts.store, {
      holdMs: () => Math.min(opts.ttlMaxMs, this.longestTtlMs),
      ...(opts.onStateLost !== undefined ? { onLost: opts.onStateLost } : {}),
    });
    this.clock = opts.clock ?? Date.now;
    this.hosts = new HostPolicies(opts.defaults);
    this.longestTtlMs = opts.defaults.defaultTtlMs;
    this.index = new LeaseIndex(this.clock);
    this.queues = new WaitQueues<LeaseView>({
      clock: this.clock,
      pollMs: opts.waitPollMs,
      orphaned: (lease) => this.abandon(lease),
      ...(opts.maxWaitingPerKey === undefined ? {} : { maxPerKey: opts.maxWaitingPerKey }),
      ...(opts.maxWaiting === undefined ? {} : { maxTotal: opts.maxWaiting }),
      ...(opts.releases === undefined ? {} : feedHooks(opts.releases)),
    });
    opts.releases?.onRelease((pool, domainKey) => this.queues.wake(queueKey({ pool, domainKey })));
  }

  /** `beforeFirstUse` of a pool, once it succeeded. */
  private firstUse(pool: string): Promise<void> {
    const hook = this.opts.beforeFirstUse;
    if (hook === undefined) return Promise.resolve();
    const known = this.used.get(pool);
    if (known === true) return Promise.resolve();
    if (known !== undefined) return known;
    const first = hook(pool);
    this.used.set(pool, first);
    first.then(
      () => {
        if (this.used.get(pool) === first) this.used.set(pool, true);
      },
      () => {
        if (this.used.get(pool) === first) this.used.delete(pool);
      },
    );
    return first;
  }

  /**
   * The store could not be reached: workers may be leasing from their fallback pools meanwhile.
   * Every pool runs `beforeFirstUse` again before its next grant, and the owner is told.
   */
  private async watched<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (err) {
      if (err instanceof StoreUnavailableError) {
        this.used.clear();
        // a failover or restart shows as calls that fail: before the next grant, the server is
        // checked — another one may have missed the last writes (a lease granted just before)
        this.verifyServer = true;
        this.opts.onStoreDown?.();
      }
      throw err;
    }
  }

  /** Pools this broker has served, and their policies (cached). */
  pools(): string[] {
    return this.policies.pools();
  }

  /** The pools this broker serves (they have proxies). */
  servedPools(): string[] {
    return this.policies.pools().filter((p) => this.policies.has(p));
  }

  /** Whether this broker serves `pool` (it has proxies): only such pools are named in metrics. */
  serves(pool: string): boolean {
    return this.policies.has(pool);
  }

  /** The policies of a pool as this broker applies them. */
  policySet(pool: string): Promise<PolicySet> {
    return this.policies.get(pool);
  }

  /** Leases granted through this broker, not released through it and not past their last known expiry (a metric). */
  get liveLeases(): number {
    return this.index.live();
  }

  /** Waiting acquires on this broker (a metric). */
  get waiting(): number {
    return this.queues.size;
  }

  /** Acquire, waiting up to `spec.maxWaitMs` inside the broker. `signal` ends the wait. */
  acquire(spec: AcquireSpec, signal?: AbortSignal): Promise<Decision> {
    return this.watched(this.acquireNow(spec, signal));
  }

  private async acquireNow(spec: AcquireSpec, signal?: AbortSignal): Promise<Decision> {
    const start = this.clock();
    if (this.verifyServer) await this.checkServer();
    const params = this.resolveNow(spec) ?? (await this.resolve(spec));
    const key = queueKey(params);
    // Plain waiters, whom any free proxy serves, wait for this domain-key: no overtaking them —
    // except by an acquire of one proxy by id: a worker back from fallback hands its lease or its
    // pacing of that pair over (a refusal here would leave the broker pacing the pair from its
    // last broker use, and the next grant could reach the site too early).
    if (spec.proxyId === "" && this.queues.waitingPlain(key) > 0) {
      if (spec.maxWaitMs === 0) return { kind: "denied", retryAfterMs: this.queues.retryAfterMs(key) };
      return this.wait(spec, params, start, signal, this.queues.retryAfterMs(key));
    }
    const first = await this.attempt(spec, params);
    if (first.kind === "granted" || spec.maxWaitMs === 0) return first;
    return this.wait(spec, params, start, signal, first.retryAfterMs);
  }

  /**
   * Compare the store's server id with the last one seen; when it changed (a restart, a failover:
   * writes may be lost), hold grants on every pool served for the longest TTL. Called every second
   * by the server, and before the next grant after a store call failed as unreachable. Concurrent
   * callers share one check; a failing check rejects (the store is still away).
   */
  checkServer(): Promise<void> {
    this.checking ??= this.checkServerNow().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkServerNow(): Promise<void> {
    const id = await this.store.serverId();
    if (this.server !== undefined && id !== this.server) {
      this.opts.onServerChanged?.(id);
      await this.policies.serverChanged();
    }
    this.server = id;
    this.verifyServer = false;
  }

  /** Renew (heartbeat) a lease. */
  renew(spec: RenewSpec): Promise<RenewResult> {
    return this.watched(this.renewNow(spec));
  }

  private async renewNow(spec: RenewSpec): Promise<RenewResult> {
    this.longestTtlMs = Math.max(this.longestTtlMs, spec.ttlMs);
    const r = await this.store.renew({
      leaseId: spec.leaseId,
      fencingToken: spec.fencingToken,
      ttlMs: spec.ttlMs,
      workerId: spec.workerId,
      liveSince: this.opts.liveSince?.() ?? 0,
    });
    if (r.kind === "renewed") this.index.touch(spec.leaseId, r.expireAt);
    return r;
  }

  /** Release a lease and, with `next`, acquire the next one in the same store step when fair. */
  release(spec: ReleaseSpec, signal?: AbortSignal): Promise<ReleaseDecision> {
    return this.watched(this.releaseNow(spec, signal));
  }

  private async releaseNow(spec: ReleaseSpec, signal?: AbortSignal): Promise<ReleaseDecision> {
    if (this.verifyServer && spec.next !== undefined) await this.checkServer();
    const nextParams = spec.next === undefined ? undefined : (this.resolveNow(spec.next) ?? (await this.resolve(spec.next)));
    const combine = nextParams !== undefined && this.policies.has(nextParams.pool) && this.queues.waiting(queueKey(nextParams)) === 0;
    const r = await this.store.release({
      leaseId: spec.leaseId,
      fencingToken: spec.fencingToken,
      outcome: spec.outcome,
      ...(combine ? { next: nextParams } : {}),
    });
    const released = this.index.take(spec.leaseId);
    if (released !== undefined) this.queues.wake(released);
    const base: ReleaseDecision = r.kind === "released" ? { kind: "released" } : { kind: "lost", reason: r.reason };
    if (spec.next === undefined || nextParams === undefined) return base;
    let next: Decision;
    if (combine && r.next !== undefined && r.next.kind !== "stale-policy") {
      next = this.decide(nextParams, r.next);
      if (next.kind === "denied" && spec.next.maxWaitMs > 0) {
        next = await this.wait(spec.next, nextParams, this.clock(), signal, next.retryAfterMs);
      }
    } else {
      next = await this.acquire(spec.next, signal);
    }
    return r.kind === "released" ? { kind: "released", next } : { kind: "lost", reason: r.reason, next };
  }

  /** Fail every waiting acquire (shutdown). */
  rejectWaiters(error: unknown): void {
    this.queues.rejectAll(error);
  }

  /** A store answer as a decision; remembers granted leases for release wake-ups. */
  private decide(params: AcquireParams, r: AcquireResult): Decision {
    if (r.kind === "granted") {
      this.index.add(r.lease.leaseId, queueKey(params), r.lease.expireAt);
      return { kind: "granted", lease: r.lease };
    }
    return { kind: "denied", retryAfterMs: r.kind === "denied" ? r.retryAfterMs : -1 };
  }

  private wait(
    spec: AcquireSpec,
    params: AcquireParams,
    start: number,
    signal: AbortSignal | undefined,
    retryAfterMs: number,
  ): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => {
      const refused = this.queues.enqueue(
        queueKey(params),
        {
          // a pool without proxies when the wait began is looked up again (they may have been added)
          attempt: () => (this.policies.has(params.pool) ? this.attempt(spec, params) : this.resolve(spec).then((p) => this.attempt(spec, p))).then(toAttempt),
          deadline: start + spec.maxWaitMs,
          narrow: spec.sessionKey !== "" || spec.proxyId !== "" || spec.tier !== "" || Object.keys(spec.labels).length > 0,
          signal,
          settle: (r) => {
            this.opts.onWaited?.(this.clock() - start, r.kind === "granted");
            if (r.kind === "error") reject(r.error);
            else if (r.kind === "granted") resolve({ kind: "granted", lease: r.grant });
            else resolve(r);
          },
        },
        retryAfterMs,
      );
      if (refused !== undefined) reject(waitRefused(refused, retryAfterMs, this.opts));
    });
  }

  /** One store attempt, reloading policies when the store says they changed. */
  private async attempt(spec: AcquireSpec, initial: AcquireParams): Promise<Decision> {
    // a pool without proxies: nothing to grant, and nothing is written for it
    if (!this.policies.has(initial.pool)) return { kind: "denied", retryAfterMs: -1 };
    let params = initial;
    for (let i = 0; ; i++) {
      const r = await this.store.acquire(params);
      if (r.kind !== "stale-policy") return this.decide(params, r);
      if (i >= MAX_POLICY_RELOADS) return { kind: "denied", retryAfterMs: this.opts.waitPollMs };
      await this.policies.reload(params.pool);
      params = await this.resolve(spec);
    }
  }

  /** The store parameters of `spec`, loading its pool's policies and running its first use when needed. */
  private async resolve(spec: AcquireSpec): Promise<AcquireParams> {
    const set = await this.policies.get(spec.pool);
    if (this.policies.has(spec.pool)) await this.firstUse(spec.pool);
    return this.paramsOf(spec, set);
  }

  /**
   * `resolve` without waiting, the common case: the pool's policies are cached and its first use
   * is done. Undefined otherwise (then `resolve`).
   */
  private resolveNow(spec: AcquireSpec): AcquireParams | undefined {
    const set = this.policies.cached(spec.pool);
    if (set === undefined) return undefined;
    if (this.opts.beforeFirstUse !== undefined && this.used.get(spec.pool) !== true) return undefined;
    return this.paramsOf(spec, set);
  }

  private paramsOf(spec: AcquireSpec, set: PolicySet): AcquireParams {
    const { eff, params: fromPolicy, shadowKeys } = this.hosts.of(set, spec.host);
    const ttlMs = spec.ttlMs > 0 ? spec.ttlMs : eff.defaultTtlMs;
    if (ttlMs > this.longestTtlMs) this.longestTtlMs = ttlMs;
    // Written out, not `{ ...fromPolicy, … }`: on Node 20 that spread followed by more properties
    // took ~22 µs per acquire (V8's slow path), this literal ~50 ns.
    const params: AcquireParams = {
      domainKey: fromPolicy.domainKey,
      maxConcurrency: fromPolicy.maxConcurrency,
      minIntervalMs: fromPolicy.minIntervalMs,
      pacing: fromPolicy.pacing,
      jitterMs: fromPolicy.jitterMs,
      adaptive: fromPolicy.adaptive,
      maxIntervalMs: fromPolicy.maxIntervalMs,
      banTtlMs: fromPolicy.banTtlMs,
      pool: spec.pool,
      workerId: spec.workerId,
      ttlMs,
      shadowKeys,
      requestId: spec.requestId,
      proxyId: spec.proxyId,
      fallbackPool: spec.fallbackPool,
      identity: spec.identity ?? "",
      policyVersion: set.version,
      sessionKey: spec.sessionKey,
      sessionTtlMs: this.opts.sessionTtlMs,
      tier: spec.tier,
      labels: spec.labels,
    };
    return params;
  }

  /** A lease granted to a waiter that went away: give it back unused. */
  private abandon(lease: LeaseView): void {
    this.release({
      leaseId: lease.leaseId,
      fencingToken: lease.fencingToken,
      outcome: { kind: "ABANDONED", httpStatus: 0, latencyMs: 0, retryAfterMs: 0 },
    }).catch(() => undefined);
  }
}

function queueKey(p: Pick<AcquireParams, "pool" | "domainKey">): string {
  return `${p.pool}\u0000${p.domainKey}`;
}

/** Watch a queue's (pool, domain-key) for releases elsewhere while it has waiters. */
function feedHooks(feed: ReleaseFeed): { opened: (key: string) => void; closed: (key: string) => void } {
  const split = (key: string): [string, string] => {
    const at = key.indexOf("\u0000");
    return [key.slice(0, at), key.slice(at + 1)];
  };
  return { opened: (key) => feed.watch(...split(key)), closed: (key) => feed.unwatch(...split(key)) };
}

function toAttempt(d: Decision): AttemptResult<LeaseView> {
  return d.kind === "granted" ? { kind: "granted", grant: d.lease } : d;
}

/** The error for an acquire that could not wait: RESOURCE_EXHAUSTED, with when to try again. */
function waitRefused(why: Refusal, retryAfterMs: number, limits: { maxWaitingPerKey?: number; maxWaiting?: number }): BrokerError {
  const what =
    why === "key-full"
      ? `${limits.maxWaitingPerKey ?? 0} acquires already wait for this domain-key (MAX_WAITING_PER_DOMAIN)`
      : `${limits.maxWaiting ?? 0} acquires already wait on this broker (MAX_WAITING)`;
  const retry = Math.max(0, Math.ceil(retryAfterMs));
  return new BrokerError(status.RESOURCE_EXHAUSTED, `not queued: ${what}; retry after ${retry} ms`, { "retry-after-ms": String(retry) }, { reason: "TOO_MANY_WAITING" });
}
