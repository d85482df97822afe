import { debuglog } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { Counter, Gauge, Registry } from "prom-client";
import { Classifier } from "../classify/index.js";
import type { Classification, ClassifierOptions, Expectations, ResponseFacts } from "../classify/index.js";
import { FallbackPool, fallbackPoolView } from "../fallback/index.js";
import type { FallbackPoolOptions, FallbackPoolView } from "../fallback/index.js";
import { ProxyBroker } from "../gen/proxybroker/v1/broker_pb.js";
import type { Pong } from "../gen/proxybroker/v1/broker_pb.js";
import { createClient } from "../wire/grpc-adapter.js";
import type { ClientOf } from "../wire/grpc-adapter.js";
import { BrokerBreaker, isOpenBreaker } from "./breaker.js";
import type { BreakerState } from "./breaker.js";
import { BrokerBackend } from "./broker-backend.js";
import type { AcquireRequest, Granted } from "./broker-backend.js";
import type { AcquireOptions, WithLeaseOptions } from "./acquire-options.js";
import { acquireRequest, grantedTtlMs } from "./acquire-request.js";
import { BrokerClientError, BrokerSlowError, ClientClosedError, InvalidArgumentError, isBrokerFailure } from "./errors.js";
import type { ClientEvents, ClientMode } from "./events.js";
import { FallbackBackend, FallbackLeftError } from "./fallback-backend.js";
import { leasedFetch } from "./fetch.js";
import type { FetchOptions, FetchResult } from "./fetch.js";
import { endAdopted, enterFallback, handOver, handOverPacing, owe, settleOwed, type Adopted, type SwitchDeps } from "./handover.js";
import { Lease, runsFor } from "./lease.js";
import type { LeaseBackend, LeaseOutcome, LeaseSource } from "./lease.js";
import { LeaseChannel } from "./lease-channel.js";
import { resolveOptions } from "./options.js";
import type { ClientOptions, ResolvedOptions } from "./options.js";
import { carriedOutcome } from "./outcome-carrier.js";
import { OutcomeReplay } from "./outcome-replay.js";
import { Reachability, brokerGone } from "./reachability.js";
import { fallbackHoldMs, fallbackWindowOf, longestTtlOf, silenceRulesOf, silentHoldMs } from "./fallback-rules.js";
import { Liveness } from "./liveness.js";
import { ClaimSync } from "./claim-sync.js";
import { claimsAnything } from "../model/fallback-claim.js";
import type { FallbackClaim } from "../model/fallback-claim.js";
import { claimToWire, epochMsOf, timestampOf } from "../wire/codec.js";
import { KNOWN_SLACK_MS, SnapshotSync } from "./snapshot-sync.js";
import { tokenInterceptor } from "./credentials.js";
import { TypedEmitter } from "./typed-events.js";
import { OwedToBroker } from "./owed.js";
import { INITIAL_STATE, modeOf, transition } from "./state.js";
import type { ClientState, ClientStateEvent, ClientStateName } from "./state.js";
import type { OwedRelease } from "./owed.js";
import { singleFlight } from "./single-flight.js";

/** Debug lines, on with NODE_DEBUG=proxybroker (Node's convention for a library's own debug output). */
const debug = debuglog("proxybroker");

/** While the broker is down and the fallback pool has nothing, an acquire retries this often. */
const DOWN_RETRY_MS = 250;

/**
 * The ProxyBroker SDK client. One Lease stream carries every lease of the process; heartbeats
 * renew held leases every ttl/3; an opossum circuit breaker switches acquires to a local fallback
 * pool while the broker or its Redis is unreachable, and back when it answers again: fallback
 * leases are handed over to the broker first, then outcomes seen meanwhile are replayed. Every
 * call settles by its deadline: an acquire by `maxWaitMs` + the broker call timeout.
 *
 * Events (`ClientEvents`, typed: `client.on("mode", (mode) => …)`): `mode`, `state`, `breaker`,
 * `replayed`, `leaseLost`, `outcomesDropped`, `fallbackReady`. Errors: every one it throws or
 * rejects with is a `BrokerClientError` (see `errors.ts` for the subclasses and their codes),
 * except those of your own `withLease` callback and of the request `fetch` sends, rethrown as
 * they are. Metrics (prom-client, `client.metrics`): `proxybroker_sdk_breaker_state` (0 closed,
 * 1 half open, 2 open) and `proxybroker_sdk_acquires_total{source}`.
 */
export class ProxyBrokerClient extends TypedEmitter<ClientEvents> {
  /** The client's Prometheus registry. */
  readonly metrics = new Registry();
  readonly workerId: string;
  readonly pool: string;
  private readonly opts: ResolvedOptions;
  private readonly grpcClient: grpc.Client;
  private readonly broker: ClientOf<typeof ProxyBroker>;
  private readonly channel: LeaseChannel;
  private readonly breaker: BrokerBreaker;
  private readonly brokerBackend: BrokerBackend;
  private readonly fallbackPool: FallbackPool;
  private readonly fallbackView: FallbackPoolView;
  private readonly fallbackBackend: FallbackBackend;
  private readonly snapshots: SnapshotSync;
  private readonly replay: OutcomeReplay;
  private readonly classifier: Classifier;
  private readonly reach: Reachability;
  private readonly liveness: Liveness;
  private readonly claims: ClaimSync;
  private readonly live = new Set<Lease>();
  private readonly adopted: Adopted = new Map();
  /** Releases the broker has not heard, acquires it never answered (see `settleOwed`). */
  private readonly owed: OwedToBroker;
  private readonly acquires = new Counter({
    name: "proxybroker_sdk_acquires_total",
    help: "Leases acquired, by source",
    labelNames: ["source"],
    registers: [this.metrics],
  });
  private readonly breakerGauge = new Gauge({
    name: "proxybroker_sdk_breaker_state",
    help: "Circuit breaker: 0 closed, 1 half open, 2 open",
    registers: [this.metrics],
  });
  /** Broker, switching, fallback or handing over (state.ts): changed by `move` alone. */
  private current: ClientState = INITIAL_STATE;
  /** The switches queued (entering fallback, handing over), one after the other; acquires wait for them. */
  private switching: Promise<void> = Promise.resolve();
  private closed = false;
  /** The last failure of a broker call (why the broker is unreachable). */
  private lastFailure: unknown;
  /** `fallbackUsable` when last checked (see the `fallbackReady` event). */
  private ready = false;

  /** Throws `InvalidArgumentError` (INVALID_ARGUMENT) naming a bad option. */
  constructor(options: ClientOptions) {
    super();
    this.opts = resolveOptions(options);
    // the broker's response expectations come with the pool snapshot's policies
    this.classifier = classifierOf({ policies: () => this.fallbackPool.snapshot?.policies, ...this.opts.classifier }, this.opts.clock);
    this.owed = new OwedToBroker(this.opts.fallback.maxBufferedOutcomes);
    this.workerId = this.opts.workerId;
    this.pool = this.opts.pool;
    this.grpcClient = grpcClientOf(this.opts);
    this.broker = createClient(ProxyBroker, this.grpcClient);
    this.liveness = new Liveness({
      silentAfterMs: this.opts.fallback.silentAfterMs,
      monotonic: this.opts.monotonic,
      ping: (heardTime) => this.ping(heardTime),
      onSilent: () => this.silent(),
    });
    this.reach = new Reachability({
      silentFor: () => this.liveness.silentFor(),
      silentAfterMs: this.opts.fallback.silentAfterMs,
      windowMs: () => fallbackWindowOf(this.fallbackPool.snapshot),
    });
    this.channel = new LeaseChannel({
      broker: this.broker,
      backoff: { initialMs: 50, maxMs: 1_000 },
      clock: this.opts.clock,
      onAnswer: () => this.answered(),
      onBreak: () => void this.checkGone(),
      onPong: (pong) => this.ponged(pong),
      onRevoked: (leaseId) => this.revoked(leaseId),
      onWanted: (leaseId) => this.wanted(leaseId),
    });
    this.breaker = new BrokerBreaker({ ...this.opts.breaker, onState: (s) => this.onBreaker(s) });
    this.brokerBackend = new BrokerBackend({
      channel: this.channel,
      breaker: this.breaker,
      callTimeoutMs: this.opts.breaker.callTimeoutMs,
      monotonic: this.opts.monotonic,
      workerId: this.workerId,
      fallbackPool: this.opts.fallback.enabled,
      yieldsLeases: this.opts.yieldsLeases,
      // answered lately: a timeout is slowness, not an outage
      connected: () => !this.liveness.silent,
      onUnanswered: (requestId, request) => this.owed.keep({ kind: "recall", requestId, request, sentAt: this.opts.clock() }),
    });
    this.fallbackPool = new FallbackPool({
      ...fallbackPoolOptions(this.opts),
      onShareBuilt: () => this.checkReady(),
      onOutcomesDropped: (count) => this.emit("outcomesDropped", count),
    });
    this.fallbackView = fallbackPoolView(this.fallbackPool);
    this.claims = new ClaimSync({
      candidate: () => this.fallbackPool.claimCandidate(this.snapshots.known),
      inUse: () => this.fallbackPool.acknowledged,
      onWaiting: () => this.liveness.ping(),
      use: (claim) => this.useClaim(claim),
      clock: this.opts.clock,
    });
    this.fallbackBackend = new FallbackBackend(this.fallbackPool, this.opts.monotonic);
    this.replay = new OutcomeReplay({
      broker: this.broker,
      fallback: this.fallbackPool,
      workerId: this.workerId,
      callTimeoutMs: this.opts.breaker.callTimeoutMs,
    });
    this.snapshots = new SnapshotSync({
      broker: this.broker,
      pool: this.pool,
      workerId: this.workerId,
      fallback: this.fallbackPool,
      refreshMs: this.opts.fallback.snapshotRefreshMs,
      membershipRefreshMs: this.opts.fallback.membershipRefreshMs,
      callTimeoutMs: this.opts.breaker.callTimeoutMs,
      healthy: () => this.mode === "broker",
      onContact: () => this.heard(),
      onListed: () => this.listed(),
      monotonic: this.opts.monotonic,
      clock: this.opts.clock,
    });
    this.start();
  }

  /** Load the snapshot file and start refreshing snapshots (with a fallback pool), and pinging. */
  private start(): void {
    if (this.opts.fallback.enabled) {
      void this.fallbackPool
        .loadFromFile()
        // a worker started during an outage: the claim the broker acknowledged before, if any
        .then(() => this.checkReady())
        .catch(() => false);
      this.snapshots.start();
    }
    this.liveness.start();
  }

  /** The Lease stream carried an answer: settle what the broker missed, if anything. */
  private answered(): void {
    this.heard();
    if (this.owed.size > 0) void this.settleOwedNow();
  }

  /** A pong: the broker's clock to echo, and the claim version it acknowledged. */
  private ponged(pong: Pong): void {
    this.liveness.pong(epochMsOf(pong.time));
    void this.claims.acknowledged(Number(pong.claimVersion)).catch(() => undefined);
  }

  /** The broker acknowledged `claim`: the fallback pool serves it. */
  private async useClaim(claim: FallbackClaim): Promise<void> {
    await this.fallbackPool.useClaim(claim).catch(() => undefined);
    this.checkReady();
  }

  /** A membership list arrived: the claim to send, and whether the fallback pool is ready, may have changed. */
  private listed(): void {
    this.claims.update();
    this.checkReady();
  }

  /** The leases this client holds now (from the broker or its fallback pool). */
  get leasesHeld(): number {
    return this.live.size;
  }

  /** Where new leases come from right now. */
  get mode(): ClientMode {
    return modeOf(this.current.name);
  }

  /** Where the client stands: `broker`, `switching` (into fallback), `fallback` or `handingOver` (see state.ts). */
  get state(): ClientStateName {
    return this.current.name;
  }

  /** The local fallback pool, read-only (its share, snapshot, buffered and dropped outcomes). */
  get fallback(): FallbackPoolView {
    return this.fallbackView;
  }

  /**
   * Lease a proxy for `target` (a URL, or a host). Settles within `maxWaitMs` plus the broker call
   * timeout. Rejects with `NoProxyAvailableError` when none is eligible within `maxWaitMs`,
   * `InvalidArgumentError` for bad input (the broker's own INVALID_ARGUMENT answer is a
   * `BrokerClientError` with that code), `BrokerSlowError` (DEADLINE_EXCEEDED) when the broker is
   * connected but slow, UNAVAILABLE when the broker cannot be reached and the fallback pool has
   * no proxy for this worker (it keeps trying, paced, until the deadline first), and
   * `ClientClosedError` after `close()`.
   */
  async acquire(target: string, options: AcquireOptions = {}): Promise<Lease> {
    if (this.closed) throw new ClientClosedError();
    const req = this.request(target, options);
    const { monotonic } = this.opts;
    const waitUntil = monotonic() + req.maxWaitMs;
    const deadline = waitUntil + this.opts.breaker.callTimeoutMs;
    const remaining = (): AcquireRequest => ({ ...req, maxWaitMs: Math.max(0, Math.round(waitUntil - monotonic())) });
    for (;;) {
      await this.switching;
      // Closed: the broker. Half open: the breaker lets one probe through (the rest fall back) —
      // unless the connection is still silent: a probe could only wait out its whole deadline
      // (maxWaitMs and the call timeout) while its caller's work stalls; the pings notice the
      // broker's return, and the first acquire after that probes. Open: the fallback pool when it
      // may be used (see Reachability), else wait.
      const probeWouldHang = this.breaker.state === "halfOpen" && this.reach.why() === "silent" && this.reach.silent();
      if ((this.breaker.state !== "open" && !probeWouldHang) || !this.fallbackUsable) {
        try {
          const granted = await this.confirmLate(await this.brokerBackend.acquire(remaining()), req);
          if (granted === undefined) continue; // a late grant that could not be confirmed: given back
          if (!this.heldInFallback(granted)) return this.wrap(granted, "broker", req, options);
          // A probe while fallback leases still run got a pair one of them holds, or one whose
          // fallback pacing still runs (the broker does not know of that use yet): give it back,
          // which also makes the broker pace that pair from now.
          await this.brokerBackend
            .release({ id: granted.view.leaseId, fencingToken: granted.view.fencingToken }, { kind: "ABANDONED" })
            .catch(() => undefined);
          continue;
        } catch (err) {
          // Slow (connected, no answer): the caller's error, until the broker has been silent so
          // long that this worker's share is reserved for it (Reachability): then fallback.
          const slow = err instanceof BrokerSlowError;
          if (!(slow || isOpenBreaker(err) || isBrokerFailure(err))) throw err;
          this.lastFailure = err;
          if (slow) {
            if (!(this.fallbackUsable && this.reach.fallbackAllowed())) throw err;
            this.breaker.trip();
          } else if (!isOpenBreaker(err)) {
            this.reach.failed(err);
          }
        }
      }
      if (this.fallbackUsable && this.reach.fallbackAllowed()) {
        // Every way into fallback goes through the breaker: its switch holds the pool, adopts or
        // gives up this worker's broker leases, and hands over on the way back.
        if (this.mode === "broker") this.breaker.trip();
        await this.switching;
        this.applyHold();
        // The hold after a switch (a pair's last broker use may have been just now) is waited
        // out within the call's deadline rather than reported as "no proxy".
        const holdWaitMs = Math.max(0, Math.floor(deadline - monotonic()));
        try {
          return this.wrap(await this.fallbackBackend.acquire(remaining(), holdWaitMs), "fallback", req, options);
        } catch (err) {
          if (err instanceof FallbackLeftError) continue; // back to the broker meanwhile
          throw err;
        }
      }
      // Unreachable, and nothing this worker may use yet: wait (paced), not past the deadline.
      const left = deadline - monotonic();
      if (left <= 0) throw unreachable(this.lastFailure);
      // Retry the broker at that pace: the next failure may show it is gone (connection refused).
      const pause = Math.min(left, DOWN_RETRY_MS, this.fallbackUsable ? Math.max(10, this.reach.fallbackIn()) : DOWN_RETRY_MS);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /**
   * Run `fn` with a leased proxy: heartbeats while it runs, then always releases — with the
   * outcome `fn`'s result carries (or `outcomeOf`, or SUCCESS), or the one its error implies
   * (an `OutcomeError`'s, else the classifier's reading of the error).
   */
  async withLease<T>(target: string, fn: (lease: Lease) => Promise<T>, options: WithLeaseOptions<T> = {}): Promise<T> {
    const lease = await this.acquire(target, options);
    const started = this.opts.clock();
    let outcome: LeaseOutcome = { kind: "ABANDONED" };
    try {
      const value = await fn(lease);
      outcome = options.outcomeOf?.(value) ?? carriedOutcome(value) ?? { kind: "SUCCESS" };
      return value;
    } catch (err) {
      outcome = carriedOutcome(err) ?? this.outcomeOfError(err, lease);
      throw err;
    } finally {
      const latencyMs = this.opts.clock() - started;
      await lease.release({ latencyMs, ...outcome }).catch(() => undefined);
    }
  }

  /** Lease, fetch `url` through the proxy (undici), classify, release; returns the response. */
  fetch(url: string, options: FetchOptions = {}): Promise<FetchResult> {
    return leasedFetch({ acquire: (t, o) => this.acquire(t, o), classifier: this.classifier, clock: this.opts.clock }, url, options);
  }

  /** Classify a response with this client's rules and size medians. */
  classify(response: ResponseFacts, expectations?: Expectations): Classification {
    return this.classifier.classify(response, expectations);
  }

  /**
   * Release live leases (ABANDONED), tell the broker this worker leaves (`LeavePool`: its share is
   * free for the others at once, instead of staying reserved for the fallback window as for a
   * worker that vanished), stop timers and close the connection. The leave is skipped — the share
   * stays reserved, which is safe — when the broker is unreachable or a pair used from the
   * fallback pool is still within its pacing interval.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.snapshots.stop();
    await Promise.allSettled([...this.live].map((l) => l.release({ kind: "ABANDONED" })));
    if (this.mode === "broker") await this.settleOwedNow();
    if (this.mode === "broker" && this.fallbackPool.quiet(this.opts.clock())) {
      await this.broker
        .leavePool({ pool: this.pool, workerId: this.workerId }, { deadline: this.opts.breaker.callTimeoutMs })
        .catch(() => undefined);
    }
    this.liveness.stop();
    this.breaker.shutdown();
    this.channel.close();
    this.grpcClient.close();
  }

  /**
   * A heartbeat found the broker gone (its Redis down, or the process): as a failed acquire
   * would, open the breaker, so that leases outside this worker's share are given up now.
   */
  private renewFailed(err: unknown): void {
    if (this.closed || !this.opts.fallback.enabled || this.breaker.state !== "closed" || !brokerGone(err)) return;
    this.reach.failed(err);
    this.lastFailure = err;
    this.breaker.trip();
  }

  /**
   * The stream broke: when the broker turns out to be gone (a connection refused), open the
   * breaker now, so that broker leases outside this worker's share are given up at once even
   * when no acquire is running (another worker's fallback pool may use those proxies soon).
   */
  private readonly checkGone = singleFlight(async () => {
    if (this.closed || !this.opts.fallback.enabled || this.breaker.state !== "closed") return;
    if (await this.snapshots.refreshWorkers()) return;
    const err = this.snapshots.lastError;
    if (!brokerGone(err) || this.breaker.state !== "closed") return;
    this.reach.failed(err);
    this.lastFailure = err;
    this.breaker.trip();
  });

  /**
   * Hold the fallback pool while other workers' broker leases may still run on this worker's
   * claim (docs/spec.md §7): a silent broker — until it surely reserved the claim and the others
   * stopped (`silentHoldMs`, from the last pong); else `fallbackHoldMs` after entering fallback. A
   * static list's fleet is unknown, so counted as mixed.
   */
  private applyHold(): void {
    const mixed = this.opts.fallback.staticProxies.length > 0 || this.snapshots.mixedWithin(this.reach.windowMs());
    const yielding = this.snapshots.yieldingWithin(this.reach.windowMs());
    const longestTtlMs = this.leaseHoldMs();
    const why = this.reach.why();
    if (why !== "silent") {
      this.fallbackPool.holdAtLeast(fallbackHoldMs({ why, mixed, yielding, longestTtlMs }));
      return;
    }
    const holdMs = silentHoldMs({ ...silenceRulesOf(this.fallbackPool.snapshot), mixed, yielding, longestTtlMs });
    this.fallbackPool.othersStopBy(this.opts.clock() - this.liveness.sincePong() + holdMs);
  }

  /** The broker answered something: it is reachable. */
  private heard(): void {
    this.liveness.answered();
    this.reach.contact();
    this.fallbackPool.contact();
  }

  /** Send a ping echoing `heardTime`, with the claim that waits for its acknowledgement. */
  private ping(heardTime: number): boolean {
    if (this.closed) return false;
    const claim = this.claims.toSend;
    return this.channel.ping({
      workerId: this.workerId,
      pool: this.pool,
      fallbackPool: this.opts.fallback.enabled,
      ...(heardTime > 0 ? { heardTime: timestampOf(heardTime) } : {}),
      ...(claim === undefined ? {} : { claim: { ...claimToWire(claim), fresh: this.claims.fresh } }),
    });
  }

  /**
   * The connection answered nothing for `fallback.silentAfterMs`: an outage (docs/spec.md §7).
   * Open the breaker, as a refused connection would: broker leases outside this worker's claim are
   * given up now (another worker's fallback pool may serve them soon), and acquires go to the
   * fallback pool once its hold allows.
   */
  private silent(): void {
    if (this.closed || this.breaker.state !== "closed") return;
    this.lastFailure = new BrokerClientError(
      grpc.status.UNAVAILABLE,
      `the broker answered nothing for ${this.opts.fallback.silentAfterMs} ms: a silent connection counts as unreachable`,
    );
    debug("worker %s: the broker is silent (no answer for %d ms): outage", this.workerId, this.opts.fallback.silentAfterMs);
    this.breaker.trip();
  }

  /** The broker revoked a broker lease of this worker (its pair went to a silent worker's claim): stop using it. */
  private revoked(leaseId: string): void {
    for (const l of this.live) {
      if (l.source === "broker" && l.id === leaseId) {
        debug("worker %s: lease %s revoked by the broker", this.workerId, leaseId);
        l.revoke("REVOKED");
      }
    }
  }

  /** The broker asked for a reusable lease back: its holder stops sending requests through it. */
  private wanted(leaseId: string): void {
    for (const l of this.live) if (l.source === "broker" && l.id === leaseId) l.want();
  }

  private leaseHoldMs(): number {
    return longestTtlOf(this.fallbackPool.snapshot, this.opts.ttlMs);
  }

  /**
   * A lease's deadline counts from when its acquire was sent; after a long wait in the broker it
   * could arrive with little or nothing left. Such a grant (past half its TTL) is confirmed by a
   * renew first, its deadline then counting from the renew; one that cannot be is given back.
   */
  private async confirmLate(g: Granted, req: AcquireRequest): Promise<Granted | undefined> {
    const ttlMs = grantedTtlMs(req.ttlMs, g.view.expireAt, this.opts.clock());
    if (this.opts.monotonic() - g.sentAt <= runsFor(g.view.ttlMs, ttlMs) / 2) return g;
    const sentAt = this.opts.monotonic();
    try {
      const renewed = await this.brokerBackend.renew({ id: g.view.leaseId, fencingToken: g.view.fencingToken }, ttlMs);
      return { view: { ...g.view, expireAt: renewed.expireAt, ttlMs: renewed.ttlMs }, sentAt };
    } catch {
      await this.brokerBackend
        .release({ id: g.view.leaseId, fencingToken: g.view.fencingToken }, { kind: "ABANDONED" })
        .catch(() => undefined);
      return undefined;
    }
  }

  /** A fallback lease of this client holds the granted pair, or used it less than its interval ago (the broker cannot know). */
  private heldInFallback(g: Granted): boolean {
    for (const l of this.live) {
      if (l.source === "fallback" && !l.ended && l.proxy.id === g.view.proxy.id && l.domain === g.view.domainKey) return true;
    }
    return this.fallbackPool.usedLately(g.view.proxy.id, g.view.domainKey, this.opts.clock());
  }

  /**
   * The fallback pool has a share for this worker that no other worker's share overlaps: a static
   * list (sharded by configuration), a snapshot file from before this start, or a snapshot in which
   * this worker has been listed long enough for every other worker to know of it.
   */
  get fallbackUsable(): boolean {
    if (!this.opts.fallback.enabled || !this.fallbackBackend.available) return false;
    if (this.opts.fallback.staticProxies.length > 0) return true;
    // a claim names something only once this worker was known to the others (ClaimSync)
    const claim = this.fallbackPool.acknowledged;
    return claim !== undefined && claimsAnything(claim, this.opts.clock());
  }

  private request(target: string, o: AcquireOptions): AcquireRequest {
    return acquireRequest({ workerId: this.workerId, pool: this.pool, ttlMs: this.opts.ttlMs }, target, o);
  }

  /** The request a lease was granted for (a hand-over asks for the same pair again). */
  private requestOf(lease: Lease): AcquireRequest {
    return { ...this.request(lease.target, { ttlMs: lease.ttlMs }), sessionKey: lease.sessionKey };
  }

  private wrap(granted: Granted, source: LeaseSource, req: AcquireRequest, o: AcquireOptions): Lease {
    const { view, sentAt } = granted;
    this.acquires.inc({ source });
    if (source === "broker" && this.opts.fallback.enabled) this.snapshots.leased(view.domainKey);
    const backend: LeaseBackend = source === "broker" ? this.brokerLeases : this.fallbackBackend;
    const now = this.opts.clock();
    const lease = new Lease(
      {
        identity: { id: view.leaseId, fencingToken: view.fencingToken, source, expireAt: view.expireAt, backend },
        proxy: { id: view.proxy.id, url: view.proxy.url, tier: view.proxy.tier, labels: view.proxy.labels, score: view.proxy.score },
        domain: view.domainKey,
        target: req.targetUrl !== "" ? req.targetUrl : req.domain,
        sessionKey: view.sessionKey,
        sessionRebound: view.sessionRebound,
        reusable: source === "broker" && req.reuse === true && view.intervalMs === 0,
        pacingUnknown: source === "broker" && granted.pacingUnknown === true,
        ttlMs: grantedTtlMs(req.ttlMs, view.expireAt, now),
        runsMs: view.ttlMs,
        sentAt,
        heartbeat: o.heartbeat ?? true,
      },
      {
        clock: this.opts.clock,
        monotonic: this.opts.monotonic,
        onEnd: (l) => {
          this.live.delete(l);
          endAdopted({ fallback: this.fallbackBackend }, this.adopted, l);
        },
        onLost: (l, err) => this.emit("leaseLost", { leaseId: err.leaseId, reason: err.reason, source: l.source }),
      },
    );
    this.live.add(lease);
    return lease;
  }

  /** Broker leases release through the stream; an outcome that cannot reach it is kept for replay. */
  private readonly brokerLeases: LeaseBackend = {
    renew: async (l, ttl) => {
      try {
        return await this.brokerBackend.renew(l, ttl);
      } catch (err) {
        this.renewFailed(err);
        throw err;
      }
    },
    release: async (l, outcome) => {
      try {
        await this.brokerBackend.release(l, outcome);
      } catch (err) {
        // the broker keeps the lease until it hears the release (settleOwed), not its whole TTL
        if (isBrokerFailure(err)) owe(this.switchDeps(), l, outcome);
      }
    },
  };

  /**
   * In broker mode, once any switch back is done: settle what the broker missed (a hiccup of the
   * stream), so that the pairs of those leases do not stay closed for their TTL.
   */
  private readonly settleOwedNow = singleFlight(async () => {
    await this.switching;
    if (this.mode === "broker" && this.owed.size > 0) await settleOwed(this.switchDeps());
  });

  private keepOutcome(r: OwedRelease): void {
    this.replay.keep({ pool: r.pool, proxyId: r.proxyId, domainKey: r.domainKey, outcome: r.outcome, observedAt: r.observedAt });
  }

  private switchDeps(): SwitchDeps {
    return {
      pool: this.pool,
      live: () => this.live,
      broker: this.brokerBackend,
      brokerLeases: this.brokerLeases,
      fallback: this.fallbackBackend,
      request: (l) => this.requestOf(l),
      requestFor: (host) => this.request(host, { ttlMs: 1_000 }),
      pacedPairs: () => this.fallbackPool.pacedPairs(this.opts.clock()),
      owed: this.owed,
      keepOutcome: (r) => this.keepOutcome(r),
      monotonic: this.opts.monotonic,
      clock: this.opts.clock,
    };
  }

  private outcomeOfError(err: unknown, lease: Lease): LeaseOutcome {
    if (lease.signal.aborted) return { kind: "ABANDONED" };
    const c = this.classifier.classifyError(err, { targetHost: lease.domain });
    return { kind: c.kind, httpStatus: c.httpStatus, retryAfterMs: c.retryAfterMs, detail: c.reason };
  }

  /** Emit `fallbackReady` when `fallbackUsable` turned true (see `ClientEvents`). */
  private checkReady(): void {
    if (this.closed) return;
    const usable = this.fallbackUsable;
    if (usable === this.ready) return;
    this.ready = usable;
    if (!usable) return;
    debug(
      "worker %s: fallback ready, an outage no longer stops it (%d proxies in its share)",
      this.workerId,
      this.fallbackPool.share.length,
    );
    this.emit("fallbackReady");
  }

  private onBreaker(state: BreakerState): void {
    this.breakerGauge.set(state === "closed" ? 0 : state === "halfOpen" ? 1 : 2);
    this.emit("breaker", state);
    const next = this.move({ kind: "breaker", closed: state === "closed" });
    if (next === undefined) return;
    const deps = this.switchDeps();
    const done = (): void => void this.move({ kind: "switched", switchNo: next.switchNo });
    if (next.name === "switching") {
      this.fallbackPool.enter(this.opts.clock());
      this.switching = this.switching
        .then(async () => {
          try {
            await enterFallback(deps, this.adopted);
          } finally {
            done();
          }
        })
        .catch(() => undefined);
      return;
    }
    this.fallbackPool.leave();
    // Settle owed releases, hand fallback leases and pacing over before anything else is taken
    // from the broker, then replay.
    this.switching = this.switching
      .then(async () => {
        try {
          await settleOwed(deps);
          await handOver(deps);
          await handOverPacing(deps);
        } finally {
          done();
        }
      })
      .catch(() => undefined);
    void this.switching.then(async () => {
      const n = await this.replay.flush();
      if (n > 0) this.emit("replayed", n);
      await this.snapshots.refresh();
    });
  }

  /**
   * The one place the state changes (`transition`): each change is one `state` event, and a
   * change of mode a `mode` event before it. The new state, or undefined when nothing changed.
   */
  private move(event: ClientStateEvent): ClientState | undefined {
    const from = this.current;
    const to = transition(from, event);
    if (to === from) return undefined;
    this.current = to;
    const mode = modeOf(to.name);
    if (mode !== modeOf(from.name)) this.emit("mode", mode);
    this.emit("state", { from: from.name, to: to.name });
    return to;
  }
}

/** The gRPC connection to the broker: keepalive pings, quick reconnects, the token when set. */
function grpcClientOf(opts: ResolvedOptions): grpc.Client {
  return new grpc.Client(opts.address, opts.credentials, {
    "grpc.keepalive_time_ms": 5_000,
    "grpc.keepalive_timeout_ms": 5_000,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1_000,
    ...(opts.token === undefined ? {} : { interceptors: [tokenInterceptor(opts.token)] }),
  });
}

/** The fallback pool's options (its hooks aside) from the client's. */
function fallbackPoolOptions(opts: ResolvedOptions): FallbackPoolOptions {
  return {
    workerId: opts.workerId,
    clock: opts.clock,
    // a listing is used once every other worker refreshed its lists since, and not after the
    // broker may have dropped it (a list takes up to a call timeout to arrive)
    domainRule: {
      knownAfterMs: opts.fallback.membershipRefreshMs + KNOWN_SLACK_MS,
      expiryMarginMs: opts.breaker.callTimeoutMs + KNOWN_SLACK_MS,
    },
    staticProxies: opts.fallback.staticProxies,
    staticWorkers: opts.fallback.staticWorkers,
    ...(opts.fallback.shard !== undefined ? { shard: opts.fallback.shard } : {}),
    staticPool: opts.pool,
    maxBufferedOutcomes: opts.fallback.maxBufferedOutcomes,
    ...(opts.fallback.snapshotFile !== "" ? { snapshotFile: opts.fallback.snapshotFile } : {}),
  };
}

/** The client's classifier; bad rules are a bad option (`InvalidArgumentError` naming `classifier`). */
function classifierOf(options: ClassifierOptions, now: () => number): Classifier {
  try {
    return new Classifier({ ...options, now });
  } catch (err) {
    throw new InvalidArgumentError(`classifier: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** The error of an acquire that found neither the broker nor a fallback proxy by its deadline. */
function unreachable(failure: unknown): BrokerClientError {
  const why = failure instanceof Error ? failure.message : "the broker is unreachable";
  return new BrokerClientError(grpc.status.UNAVAILABLE, `no proxy: ${why}, and the fallback pool has none for this worker`, DOWN_RETRY_MS, {
    cause: failure,
  });
}
