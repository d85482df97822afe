import { StoreUnavailableError } from "@proxybroker/sdk/engine";
import { keyIsolation } from "@proxybroker/sdk/model";
import type { PolicyDefaults } from "@proxybroker/sdk/model";
import type {
  AcquireParams,
  AcquireResult,
  HoldState,
  IsolationParams,
  JoinedKey,
  LeaseView,
  LostReasonName,
  PolicySet,
  RenewResult,
  StoreServer,
} from "@proxybroker/sdk/model";
import type { LeaseStore, ReleaseFeed } from "@proxybroker/sdk/engine";
import { HostPolicies } from "./host-policies.js";
import { LeaseIndex } from "./lease-index.js";
import { channelGroup, GroupWakes } from "./group-wakes.js";
import { LongestTtls } from "./longest-ttls.js";
import { PolicyCache, type StateLoss } from "./policy-cache.js";
import type { AcquireSpec, ReleaseSpec, RenewSpec } from "./specs.js";
import { WaitQueues } from "./wait-queues.js";
import type { AttemptResult, Refusal } from "./wait-queues.js";
import { WaitRefusedError } from "./errors.js";

/** The answer to an acquire: a lease, or a denial with the earliest known retry moment. */
export type Decision =
  | { readonly kind: "granted"; readonly lease: LeaseView }
  /** `keptPending`: reusable leases of the key asked back and not yet released (kept leases). */
  | { readonly kind: "denied"; readonly retryAfterMs: number; readonly keptPending?: number };

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
  /**
   * How long an acquire without max_wait waits for reusable leases of its key that were asked
   * back (kept leases, docs/spec.md §5; an idle one comes back within a round trip). Default 200.
   */
  readonly keptGiveBackWaitMs?: number;
  /** The longest lease TTL accepted: the most that grants are held after a loss of state. */
  readonly ttlMaxMs: number;
  /**
   * Record each worker's use of a domain-key with its acquires, listed this long after its last
   * use (workers that keep a fallback pool only; 0 = not recorded): fallback shares follow them.
   */
  readonly domainUseMs?: number;
  /** Most acquires waiting per (pool, domain-key) and in all; more are refused (RESOURCE_EXHAUSTED). */
  readonly maxWaitingPerKey?: number;
  readonly maxWaiting?: number;
  /** The store lost (or may have lost) a pool's state: grants are held (for the log, re-seeding its proxies). */
  readonly onStateLost?: (pool: string, loss: StateLoss) => void;
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
  /**
   * Proxies of the pool are reserved for workers other than `workerId` (reservations.ts): its
   * acquires wait as "narrow" ones — they neither block nor are blocked by other workers' waiters,
   * whose proxies differ. Default: never.
   */
  readonly reservedFromOthers?: (pool: string, workerId: string) => boolean;
  /**
   * The store's server changed (a restart, a failover): `lossless` when both the old and the new
   * server keep every acknowledged write (nothing is held), else grants are being held (for the log).
   */
  readonly onServerChanged?: (change: { readonly id: string; readonly lossless: boolean }) => void;
  /**
   * Pools whose proxies that share their host and have no known exit IP are not granted before a
   * health check saw them (G9, `AcquireParams.grantUnknownExits`). Default: none.
   */
  readonly probeFirstPools?: ReadonlySet<string>;
  /** Releases through other replicas (the store's feed): waiting acquires are tried at once. */
  readonly releases?: ReleaseFeed;
  /** An acquire that waited (max_wait) was answered after `ms`: granted or not. */
  readonly onWaited?: (ms: number, granted: boolean) => void;
  /**
   * Reusable leases of `pool` on `domainKey` (every key when undefined) are to be given back
   * (kept leases, docs/spec.md §5): an acquire for the key was denied or waits, a RATE_LIMITED
   * outcome may have raised its interval, a BLOCKED one says the site bans, or the pool's
   * policies changed.
   */
  readonly wantBack?: (pool: string, domainKey?: string) => number;
}

const MAX_POLICY_RELOADS = 3;

/**
 * The broker's lease logic above the store: resolves policies into domain-keys, keeps waiting
 * acquires (G6) in fair queues, and wakes them when this broker sees a release. One store step per
 * operation; the only extra step is a policy reload after the store said `stale-policy`.
 */
/**
 * G8: how long past the longest lease TTL after a policy change that moved keys into an isolation
 * group the broker still treats their leases from before as unrecorded: a renewal records a lease
 * in the group its key has by the broker's policies, which every broker re-reads within a second
 * (refreshHolds) — this covers that, the read and the clocks.
 */
const TRANSITION_SLACK_MS = 3_000;

export class LeaseEngine {
  private readonly store: LeaseStore;
  private readonly policies: PolicyCache;
  private readonly clock: () => number;
  private readonly index: LeaseIndex;
  private readonly queues: WaitQueues<LeaseView>;
  /** The longest lease TTL per pool lately: what a loss of state may have left running. */
  private readonly ttls: LongestTtls;
  /** Per pool served: the store's hold state as last read (`refreshHolds`). */
  private readonly holds = new Map<string, HoldState>();
  /** `beforeFirstUse` per pool: running (its promise), or done (true) until invalidated. */
  private readonly used = new Map<string, Promise<void> | true>();
  private readonly hosts: HostPolicies;
  private readonly groups: GroupWakes;
  /** The store's server as last seen (undefined: not yet). */
  private server: StoreServer | undefined;
  /**
   * The server is checked before the next grant: at first (a restart that lost writes is noticed
   * only against a server seen before), after a store call failed as unreachable, and after the
   * store connected again.
   */
  private verifyServer = true;
  private checking: Promise<void> | undefined;

  /**
   * The longest lease TTL granted or renewed in `pool` lately, by any replica as far as this broker
   * knows (at most the longest TTL accepted): what a hold after a loss waits for, and what a
   * worker cut off from the broker waits for before its fallback pool serves it.
   */
  longestTtlOf(pool: string): number {
    return this.ttls.of(pool, this.clock());
  }

  /** Whether grants in `pool` are held after a loss of the store's state (as last read; 0 = not). */
  heldUntil(pool: string): number {
    const until = this.holds.get(pool)?.heldUntil ?? 0;
    return until > this.clock() ? until : 0;
  }

  constructor(private readonly opts: LeaseEngineOptions) {
    this.store = opts.store;
    this.clock = opts.clock ?? Date.now;
    this.ttls = new LongestTtls(opts.ttlMaxMs);
    this.policies = new PolicyCache(opts.store, {
      holdMs: (pool) => this.longestTtlOf(pool),
      clock: this.clock,
      ...(opts.onStateLost !== undefined ? { onLost: opts.onStateLost } : {}),
    });
    this.hosts = new HostPolicies(opts.defaults);
    this.index = new LeaseIndex(this.clock);
    this.groups = new GroupWakes(opts.releases);
    this.queues = new WaitQueues<LeaseView>({
      clock: this.clock,
      pollMs: opts.waitPollMs,
      orphaned: (lease) => this.abandon(lease),
      ...(opts.maxWaitingPerKey === undefined ? {} : { maxPerKey: opts.maxWaitingPerKey }),
      ...(opts.maxWaiting === undefined ? {} : { maxTotal: opts.maxWaiting }),
      ...queueHooks(opts.releases, this.groups),
    });
    opts.releases?.onRelease((pool, domainKey) => this.wakeAfterRelease(pool, domainKey));
    // connected again: the server may have restarted meanwhile (writes lost), even when no call
    // of this broker failed; it is checked before the next grant
    opts.store.onReconnect?.(() => {
      this.verifyServer = true;
    });
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
    if (this.verifyServer || this.policies.holdsPending()) await this.checkServer();
    const params = this.resolveNow(spec) ?? (await this.resolve(spec));
    const key = queueKey(params);
    // Plain waiters, whom any free proxy serves, wait for this domain-key: no overtaking them —
    // except by an acquire of one proxy by id: a worker back from fallback hands its lease or its
    // pacing of that pair over (a refusal here would leave the broker pacing the pair from its
    // last broker use, and the next grant could reach the site too early).
    if (spec.proxyId === "" && !this.narrow(spec, params) && this.queues.waitingPlain(key) > 0) {
      this.opts.wantBack?.(params.pool, params.domainKey);
      if (spec.maxWaitMs === 0) return { kind: "denied", retryAfterMs: this.queues.retryAfterMs(key) };
      return this.wait(spec, params, start, signal, this.queues.retryAfterMs(key));
    }
    const first = await this.attempt(spec, params);
    return first.kind === "granted" ? first : this.afterDenial(spec, params, start, signal, first);
  }

  /**
   * A denied acquire (`denied`, already asked back the key's reusable leases) waits up to its
   * max_wait; without one, it waits for the kept leases asked back, briefly, rather than being
   * denied what was only kept — and a key whose queue is full denies as without kept leases.
   */
  private afterDenial(
    spec: AcquireSpec,
    params: AcquireParams,
    start: number,
    signal: AbortSignal | undefined,
    denied: Extract<Decision, { kind: "denied" }>,
  ): Promise<Decision> {
    if (spec.maxWaitMs > 0) return this.wait(spec, params, start, signal, denied.retryAfterMs);
    const giveBackMs = this.opts.keptGiveBackWaitMs ?? 200;
    if ((denied.keptPending ?? 0) === 0 || giveBackMs === 0) return Promise.resolve(denied);
    return this.wait({ ...spec, maxWaitMs: giveBackMs }, params, start, signal, denied.retryAfterMs).catch((err: unknown) => {
      if (err instanceof WaitRefusedError) return denied;
      throw err;
    });
  }

  /**
   * Compare the store's server with the last one seen. When it changed (a restart, a failover) and
   * the old or the new one may have lost acknowledged writes, hold grants on every pool served for
   * the longest TTL in use there; a restart of a durable server (AOF, appendfsync always) holds
   * nothing. Each change is told once, and its holds run from the moment it was noticed, however
   * often writing them has to be tried again. Called every second by the server, and before the
   * next grant after a store call failed as unreachable or while holds are still to be written.
   * Concurrent callers share one check; a failing check rejects (the store is still away).
   */
  checkServer(): Promise<void> {
    this.checking ??= this.checkServerNow().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkServerNow(): Promise<void> {
    const now = await this.store.server();
    const was = this.server;
    this.server = now;
    this.verifyServer = false;
    if (was !== undefined && now.id !== was.id) {
      const lossless = was.durable && now.durable;
      this.opts.onServerChanged?.({ id: now.id, lossless });
      if (!lossless) this.policies.serverChanged(this.clock());
    }
    await this.policies.flushHolds();
  }

  /**
   * Read the store's hold state of every pool served: the longest TTL granted there lately (by any
   * replica), and whether grants are held; and the policies of a pool with isolation groups.
   * Called every second by the server.
   */
  async refreshHolds(): Promise<void> {
    const now = this.clock();
    for (const pool of this.servedPools()) {
      const state = await this.store.holdState(pool);
      this.holds.set(pool, state);
      this.ttls.observed(pool, state.longestTtlMs, now);
      // a broker that only renews in a pool learns of a policy change within a second too: its
      // renewals record a lease in the isolation group its key has now (G8)
      const cached = this.policies.cached(pool);
      if (cached !== undefined && cached.version !== state.policyVersion) {
        this.opts.wantBack?.(pool);
        await this.policies.reload(pool);
      }
    }
  }

  /** Renew (heartbeat) a lease. */
  renew(spec: RenewSpec): Promise<RenewResult> {
    return this.watched(this.renewNow(spec));
  }

  private async renewNow(spec: RenewSpec): Promise<RenewResult> {
    const r = await this.store.renew({
      leaseId: spec.leaseId,
      fencingToken: spec.fencingToken,
      ttlMs: spec.ttlMs,
      workerId: spec.workerId,
      honorsTtl: spec.honorsTtl === true,
      liveSince: this.opts.liveSince?.() ?? 0,
      isolationOf: this.isolationOfKey,
    });
    // (the TTL of a renewal reaches `ttls` through the store's record: refreshHolds)
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
    if (released !== undefined && (spec.outcome.kind === "RATE_LIMITED" || spec.outcome.kind === "BLOCKED")) {
      // adaptive pacing may have raised the key's interval, or the site bans: nobody goes on unpaced
      this.opts.wantBack?.(...splitQueue(released.queueKey));
    }
    if (released !== undefined) {
      this.queues.wake(released.queueKey);
      if (released.group !== "") this.wakeGroup(poolOfQueue(released.queueKey), released.group);
    }
    const base: ReleaseDecision = r.kind === "released" ? { kind: "released" } : { kind: "lost", reason: r.reason };
    if (spec.next === undefined || nextParams === undefined) return base;
    let next: Decision;
    if (combine && r.next !== undefined && r.next.kind !== "stale-policy") {
      next = this.decide(spec.next, nextParams, r.next);
      if (next.kind === "denied") next = await this.afterDenial(spec.next, nextParams, this.clock(), signal, next);
    } else {
      next = await this.acquire(spec.next, signal);
    }
    return r.kind === "released" ? { kind: "released", next } : { kind: "lost", reason: r.reason, next };
  }

  /** A release elsewhere (another replica) of `domainKey`, or of a key of a group's channel. */
  private wakeAfterRelease(pool: string, domainKey: string): void {
    const group = channelGroup(domainKey);
    if (group === undefined) this.queues.wake(queueKey({ pool, domainKey }));
    else this.wakeGroup(pool, group);
  }

  /** Wake the waiters of every key of `group` in `pool`. */
  private wakeGroup(pool: string, group: string): void {
    for (const key of [...this.groups.waiting(pool, group)]) this.queues.wake(key);
  }

  /** Fail every waiting acquire (shutdown). */
  rejectWaiters(error: unknown): void {
    this.queues.rejectAll(error);
  }

  /** A store answer as a decision; remembers granted leases for release wake-ups. */
  private decide(spec: AcquireSpec, params: AcquireParams, r: AcquireResult): Decision {
    if (r.kind === "granted") {
      this.index.add(r.lease.leaseId, { queueKey: queueKey(params), group: params.isolation?.group ?? "", expireAt: r.lease.expireAt });
      return { kind: "granted", lease: r.lease.intervalMs === 0 && !this.pacingKnown(spec) ? pacingUnknown(r.lease) : r.lease };
    }
    const retryAfterMs = r.kind === "denied" ? r.retryAfterMs : -1;
    // the store denied it: the key's reusable leases are asked back (kept leases, spec §5)
    const keptPending = r.kind === "denied" ? (this.opts.wantBack?.(params.pool, params.domainKey) ?? 0) : 0;
    return keptPending > 0 ? { kind: "denied", retryAfterMs, keptPending } : { kind: "denied", retryAfterMs };
  }

  private wait(
    spec: AcquireSpec,
    params: AcquireParams,
    start: number,
    signal: AbortSignal | undefined,
    retryAfterMs: number,
  ): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => {
      const key = queueKey(params);
      const refused = this.queues.enqueue(
        key,
        {
          // a pool without proxies when the wait began is looked up again (they may have been added)
          attempt: () =>
            (this.policies.has(params.pool) ? this.attempt(spec, params) : this.resolve(spec).then((p) => this.attempt(spec, p))).then(
              toAttempt,
            ),
          deadline: start + spec.maxWaitMs,
          narrow: this.narrow(spec, params),
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
      // a release of another key of its isolation group may free what it waits for
      else if (params.isolation !== undefined && params.isolation.group !== "") this.groups.join(params.pool, params.isolation.group, key);
    });
  }

  /**
   * A request only some proxies can serve (a session, a proxy id, a tier, labels — or a worker
   * some proxies are reserved against): its wait does not hold up others, nor is held up by them.
   */
  private narrow(spec: AcquireSpec, params: AcquireParams): boolean {
    if (spec.sessionKey !== "" || spec.proxyId !== "" || spec.tier !== "" || Object.keys(spec.labels).length > 0) return true;
    return this.opts.reservedFromOthers?.(params.pool, params.workerId) ?? false;
  }

  /** One store attempt, reloading policies when the store says they changed. */
  private async attempt(spec: AcquireSpec, initial: AcquireParams): Promise<Decision> {
    // a pool without proxies: nothing to grant, and nothing is written for it
    if (!this.policies.has(initial.pool)) return { kind: "denied", retryAfterMs: -1 };
    let params = initial;
    for (let i = 0; ; i++) {
      const held = this.isolationHeldMs(spec);
      if (held > 0) return { kind: "denied", retryAfterMs: held };
      const r = await this.store.acquire(params);
      if (r.kind !== "stale-policy") return this.decide(spec, params, r);
      if (i >= MAX_POLICY_RELOADS) return { kind: "denied", retryAfterMs: this.opts.waitPollMs };
      this.opts.wantBack?.(params.pool);
      await this.policies.reload(params.pool);
      params = await this.resolve(spec);
    }
  }

  /**
   * Whether the broker knows the pacing of `spec`'s host: a policy of its pool applies to it. A host
   * no policy names runs at 0 only until adaptive pacing learned its site's limit from 429s, so its
   * unpaced grants are not known to be unpaced (kept leases, docs/spec.md §5: never reusable).
   */
  private pacingKnown(spec: AcquireSpec): boolean {
    const set = this.policies.cached(spec.pool);
    return set !== undefined && this.hosts.of(set, spec.host).configured;
  }

  /** G8: the isolation group of a domain-key now, by the cached policies (undefined: not known). */
  private readonly isolationOfKey = (pool: string, domainKey: string): Pick<IsolationParams, "group" | "affinityMs"> | undefined => {
    const set = this.policies.cached(pool);
    return set === undefined ? undefined : keyIsolation(set.policies, domainKey);
  };

  /**
   * G8: how much longer the acquires of `spec`'s isolation group wait after a policy change moved
   * into the group domain-keys nobody can list (0 = none): until leases granted before it, which
   * no hold records, can no longer run.
   */
  private isolationHeldMs(spec: AcquireSpec): number {
    const set = this.policies.cached(spec.pool);
    if (set === undefined || set.history.length === 0) return 0;
    const since = this.hosts.of(set, spec.host).isolationHeldSince;
    if (since === 0) return 0;
    return Math.max(0, since + this.longestTtlOf(spec.pool) + TRANSITION_SLACK_MS - this.clock());
  }

  /**
   * G8: `isolation` with the keys that joined its group whose leases from before the change may
   * still run unrecorded: until the longest TTL after the change (a lease renewed since is
   * recorded in the group). Past that, no acquire pays for reading them.
   */
  private withJoined(pool: string, isolation: IsolationParams | undefined, joined: readonly JoinedKey[]): IsolationParams | undefined {
    if (isolation === undefined) return undefined;
    const from = this.clock() - this.longestTtlOf(pool) - TRANSITION_SLACK_MS;
    const due = joined.filter((j) => j.since > from).map((j) => j.key);
    return due.length === 0 ? isolation : { ...isolation, joinedKeys: due };
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
    const { eff, params: fromPolicy, shadowKeys, isolation, joined } = this.hosts.of(set, spec.host);
    const ttlMs = spec.ttlMs > 0 ? spec.ttlMs : eff.defaultTtlMs;
    this.ttls.note(spec.pool, ttlMs, this.clock());
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
      isolation: joined.length === 0 ? isolation : this.withJoined(spec.pool, isolation, joined),
      requestId: spec.requestId,
      proxyId: spec.proxyId,
      fallbackPool: spec.fallbackPool,
      domainUseMs: spec.fallbackPool ? (this.opts.domainUseMs ?? 0) : 0,
      yieldsLeases: spec.yieldsLeases === true,
      honorsTtl: spec.honorsTtl === true,
      identity: spec.identity ?? "",
      policyVersion: set.version,
      sessionKey: spec.sessionKey,
      sessionTtlMs: this.opts.sessionTtlMs,
      tier: spec.tier,
      labels: spec.labels,
      grantUnknownExits: this.opts.probeFirstPools?.has(spec.pool) !== true,
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

/**
 * A grant that set no interval on a pair whose pacing the broker does not know (no policy applies):
 * its interval is reported "not known" (-1), so it is never granted reusable.
 */
function pacingUnknown(lease: LeaseView): LeaseView {
  return { ...lease, intervalMs: -1 };
}

function queueKey(p: Pick<AcquireParams, "pool" | "domainKey">): string {
  return `${p.pool}\u0000${p.domainKey}`;
}

/** The pool of a queue key. */
function poolOfQueue(key: string): string {
  return key.slice(0, key.indexOf("\u0000"));
}

/** A queue key's pool and domain-key. */
function splitQueue(key: string): [pool: string, domainKey: string] {
  const at = key.indexOf("\u0000");
  return [key.slice(0, at), key.slice(at + 1)];
}

/**
 * Watch a queue's (pool, domain-key) for releases elsewhere while it has waiters; a queue that
 * empties leaves its isolation group's wake-ups.
 */
function queueHooks(feed: ReleaseFeed | undefined, groups: GroupWakes): { opened: (key: string) => void; closed: (key: string) => void } {
  return {
    opened: (key) => feed?.watch(...splitQueue(key)),
    closed: (key) => {
      feed?.unwatch(...splitQueue(key));
      groups.leave(key);
    },
  };
}

function toAttempt(d: Decision): AttemptResult<LeaseView> {
  return d.kind === "granted" ? { kind: "granted", grant: d.lease } : d;
}

/** The error for an acquire that could not wait, with when to try again. */
function waitRefused(why: Refusal, retryAfterMs: number, limits: { maxWaitingPerKey?: number; maxWaiting?: number }): WaitRefusedError {
  const what =
    why === "key-full"
      ? `${limits.maxWaitingPerKey ?? 0} acquires already wait for this domain-key (MAX_WAITING_PER_DOMAIN)`
      : `${limits.maxWaiting ?? 0} acquires already wait on this broker (MAX_WAITING)`;
  const retry = Math.max(0, Math.ceil(retryAfterMs));
  return new WaitRefusedError(`not queued: ${what}; retry after ${retry} ms`, retry);
}
