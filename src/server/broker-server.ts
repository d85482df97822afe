import type { Logger } from "pino";
import { statusSource } from "../observe/status/snapshot.js";
import type { StatusSnapshot } from "../observe/status/snapshot.js";
import { GrantHub } from "../observe/grant-hub.js";
import { MinuteCounts } from "../observe/minute-counts.js";
import { RecentRestrictions } from "../observe/recent-restrictions.js";
import type { BrokerCounts } from "../observe/counts.js";
import type { HealthPass } from "../health/pass.js";
import type { ProbeNew } from "../grpc/context.js";
import type { SourceRefresh } from "../health/sources/refresh.js";
import type { HeadersReader } from "../health/sources/headers.js";
import { ReportBudget } from "../grpc/report-budget.js";
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { addService } from "@proxybroker/sdk/wire";
import { BROKER_DEFAULTS, shareKeyOf } from "@proxybroker/sdk/model";
import type { PolicyDefaults, Reservations as ReservationMap } from "@proxybroker/sdk/model";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import type { Settings } from "../config/settings.js";
import { adminHandlers } from "../grpc/admin-service.js";
import { brokerHandlers } from "../grpc/broker-service.js";
import type { BrokerContext } from "../grpc/context.js";
import { BrokerError } from "../grpc/errors.js";
import { domainPacingGauge } from "../observe/domain-pacing.js";
import { DomainUseCache } from "../lease/domain-use-cache.js";
import { LeaseEngine } from "../lease/lease-engine.js";
import type { StateLoss } from "../lease/policy-cache.js";
import { Reservations } from "../lease/reservations.js";
import { HeldLeases } from "../lease/held-leases.js";
import type { StreamHandle } from "../grpc/context.js";
import type { HealthMetrics } from "../observe/health-metrics.js";
import { BrokerMetrics } from "../observe/metrics.js";
import { countProxies } from "../observe/proxy-counts.js";
import { RecoveryTimes } from "../observe/recovery-times.js";
import { authInterceptor, serviceRoles } from "../security/auth.js";
import type { TokenTable } from "../security/tokens.js";
import { serverCredentials } from "../security/tls.js";
import { addReflection } from "../grpc/reflection.js";

/** What the server needs from the settings. */
export type BrokerServerSettings = Pick<
  Settings,
  | "listenAddress"
  | "adminListenAddress"
  | "tlsCertFile"
  | "tlsKeyFile"
  | "tlsClientCaFile"
  | "ttlDefaultMs"
  | "ttlMinMs"
  | "ttlMaxMs"
  | "maxWaitLimitMs"
  | "waitPollMs"
  | "keptGiveBackWaitMs"
  | "sessionTtlMs"
  | "banTtlMs"
  | "workerActiveWindowMs"
  | "keepaliveTimeMs"
  | "keepaliveTimeoutMs"
  | "maxRetryAfterMs"
  | "maxMessageBytes"
  | "maxStreamsPerConnection"
  | "maxInFlightPerStream"
  | "maxWaitingPerDomain"
  | "maxWaiting"
  | "reportOutcomesPerMinute"
  | "scoring"
  | "workerAbsentAfterMs"
  | "fallbackWindowMs"
>;

export interface BrokerServerOptions {
  readonly store: LeaseStore;
  readonly settings: BrokerServerSettings;
  readonly clock?: () => number;
  /** Collect process metrics too (off in tests). */
  readonly processMetrics?: boolean;
  /** Pools whose proxies that share a host wait for their first probe (G9; `probeFirstPools` in settings.ts). */
  readonly probeFirstPools?: ReadonlySet<string>;
  /** The store lost a pool's state (e.g. re-seed the pool's proxies from the proxies file). */
  readonly onStateLost?: (pool: string, loss: StateLoss) => void;
  /** The bearer tokens now in force (read again on each call); absent or undefined = no authentication. */
  readonly tokens?: () => TokenTable | undefined;
  /** Debug lines per lease call (with request ids) go here; absent: none. */
  readonly logger?: Logger;
  /** One health-check pass over a pool (ProxyAdmin.CheckProxies); absent: CheckProxies answers FAILED_PRECONDITION. */
  readonly healthPass?: HealthPass;
  /** Probe proxies just added (their exit IP, G9); absent: no health checker. */
  readonly probeNew?: ProbeNew;
  /** Refresh one source now (ProxyAdmin.RefreshSource); absent: it answers FAILED_PRECONDITION. */
  readonly refreshSource?: SourceRefresh;
  /** Reads a source's headers file (AddSource checks it); absent: none is read. */
  readonly readSourceHeaders?: HeadersReader;
  /** The health checker's metrics, served with the broker's; absent: zeros. */
  readonly healthMetrics?: HealthMetrics;
  /** Whether this broker runs the health checker now (the status page); absent: never. */
  readonly healthLeader?: () => boolean;
  /** Told when the store's server changed (for the log). */
  readonly onServerChanged?: (change: { readonly id: string; readonly lossless: boolean }) => void;
}

const SERVICES = ["", ProxyBroker.typeName, ProxyAdmin.typeName];
const STORE_CHECK_MS = 1000;
/** A worker's use of a domain-key is listed at least this long after its last lease. */
const MIN_DOMAIN_LISTING_MS = 60_000;

/**
 * How long a worker's use of a domain-key is listed after its last lease: as long as a worker may
 * serve from its fallback pool (FALLBACK_WINDOW_MS, beyond which no listing would be used), and
 * at least a minute.
 */
export function domainListingMs(fallbackWindowMs: number): number {
  return Math.max(fallbackWindowMs, MIN_DOMAIN_LISTING_MS);
}

/** How often the reservations of silent workers' fallback claims are brought up to date. */
const RESERVATIONS_MS = BROKER_DEFAULTS.reserveIntervalMs;

/**
 * The gRPC server: ProxyBroker, ProxyAdmin, grpc.health.v1.Health and server reflection on one
 * port. `shutdown` drains: refuses new work, answers what is in flight, then closes.
 */
export class BrokerServer {
  readonly metrics: BrokerMetrics;
  /** The last minute's grants and outcomes, as this broker saw them (GetDomainStats, the status page). */
  readonly counts: BrokerCounts = {
    grantsByDomain: new MinuteCounts(),
    grantsByWorker: new MinuteCounts(),
    outcomes: new MinuteCounts(),
    restrictions: new RecentRestrictions(),
  };
  private draining = false;
  private readonly streams = new Set<StreamHandle>();
  /** The leases held through this broker's Lease streams (revoked when a silent worker's claim takes their pair). */
  private readonly held: HeldLeases;
  private readonly health = new HealthImplementation(Object.fromEntries(SERVICES.map((s) => [s, "SERVING"])));
  private readonly engine: LeaseEngine;
  private readonly defaults: PolicyDefaults;
  private storeTimer: NodeJS.Timeout | undefined;
  private readonly reservations: Reservations;
  /** The domain-keys workers used lately (snapshots list them; reservations follow them). */
  readonly domainUses: DomainUseCache;

  private constructor(
    private readonly server: grpc.Server,
    private readonly opts: BrokerServerOptions,
    /** The bound port (useful with port 0). */
    readonly port: number,
    /** ProxyAdmin's own server when ADMIN_LISTEN_ADDRESS is set, and its port. */
    private readonly admin: { readonly server: grpc.Server; readonly port: number } | undefined,
  ) {
    const s = opts.settings;
    this.held = new HeldLeases(opts.clock ?? Date.now);
    this.defaults = {
      maxConcurrency: 1,
      minIntervalMs: 0,
      defaultTtlMs: s.ttlDefaultMs,
      banTtlMs: s.banTtlMs,
      maxIntervalMs: s.scoring.adaptive.maxMs,
    };
    this.engine = new LeaseEngine({
      store: opts.store,
      defaults: this.defaults,
      sessionTtlMs: s.sessionTtlMs,
      waitPollMs: s.waitPollMs,
      keptGiveBackWaitMs: s.keptGiveBackWaitMs,
      ttlMaxMs: s.ttlMaxMs,
      maxWaitingPerKey: s.maxWaitingPerDomain,
      maxWaiting: s.maxWaiting,
      onStateLost: (pool, loss) => {
        // the store's record of silent workers went with the state: put it back (reservations.ts);
        // a failed rewrite is retried by the next tick (the pool's reservations count as stale)
        this.reservations
          .lost(pool)
          .catch((err: unknown) => opts.logger?.warn(`rewriting the reservations of pool ${pool} failed: ${String(err)}`));
        opts.onStateLost?.(pool, loss);
      },
      ...(opts.clock ? { clock: opts.clock } : {}),
      liveSince: () => this.reservations.liveSince(),
      beforeFirstUse: (pool) => this.reservations.ensure(pool),
      onStoreDown: () => this.reservations.storeDown(),
      reservedFromOthers: (pool, workerId) => this.reservations.reservesFromOthers(pool, workerId),
      ...(opts.onServerChanged === undefined ? {} : { onServerChanged: opts.onServerChanged }),
      domainUseMs: domainListingMs(s.fallbackWindowMs),
      ...(opts.probeFirstPools === undefined ? {} : { probeFirstPools: opts.probeFirstPools }),
      ...(opts.store.releaseFeed === undefined ? {} : { releases: opts.store.releaseFeed() }),
      onWaited: (ms, granted) => this.metrics.waitSeconds.observe({ result: granted ? "granted" : "denied" }, ms / 1000),
      wantBack: (pool, domainKey) => this.held.wantBack(pool, domainKey),
    });
    this.domainUses = new DomainUseCache({
      store: opts.store,
      windowMs: domainListingMs(s.fallbackWindowMs),
      clock: opts.clock ?? Date.now,
    });
    this.reservations = new Reservations({
      store: opts.store,
      domainUses: (pool) => this.domainUses.of(pool),
      pools: () => this.engine.pools(),
      clock: opts.clock ?? Date.now,
      absentAfterMs: s.workerAbsentAfterMs,
      fallbackWindowMs: s.fallbackWindowMs,
      intervalMs: RESERVATIONS_MS,
      onReserved: (pool, r, reserved) => {
        opts.logger?.info(
          { pool, workers: r.workers },
          r.workers.length === 0 ? `pool ${pool}: no reservations` : `pool ${pool}: reserved for ${r.workers.length} silent worker(s)`,
        );
        void this.revokeReserved(pool, reserved).catch((err: unknown) =>
          opts.logger?.warn(`revoking leases on the reservations of pool ${pool} failed: ${String(err)}`),
        );
      },
    });
    this.status = statusSource({
      store: opts.store,
      policyDefaults: this.defaults,
      counts: this.counts,
      pools: () => (this.engine.pools().length > 0 ? this.engine.pools() : ["default"]),
      workerActiveWindowMs: s.workerActiveWindowMs,
      healthLeader: opts.healthLeader ?? (() => false),
      waiting: () => this.engine.waiting,
      clock: opts.clock ?? Date.now,
    });
    const recoveries = new RecoveryTimes(opts.store);
    this.metrics = new BrokerMetrics({
      waiting: () => this.engine.waiting,
      domainPacing: () => domainPacingGauge({ store: opts.store, engine: this.engine, defaults: this.defaults }),
      servesPool: (pool) => this.engine.serves(pool),
      pools: () => this.engine.servedPools(),
      proxies: (pool) => countProxies(opts.store, pool),
      liveLeases: () => this.engine.liveLeases,
      recoveries: () => recoveries.since(this.engine.servedPools()),
      heldUntil: (pool) => this.engine.heldUntil(pool),
      defaultMetrics: opts.processMetrics === true,
      ...(opts.healthMetrics === undefined ? {} : { health: opts.healthMetrics }),
    });
  }

  /** What the status page shows (cached for a second): the pools this broker serves, or "default". */
  readonly status: () => Promise<StatusSnapshot>;

  /** The port ProxyAdmin is served on: its own with ADMIN_LISTEN_ADDRESS, else `port`. */
  get adminPort(): number {
    return this.admin?.port ?? this.port;
  }

  /**
   * Build the server (and ProxyAdmin's own with ADMIN_LISTEN_ADDRESS), bind `settings.listenAddress`
   * with TLS when configured, check tokens on every call when configured, and start serving.
   */
  static async start(opts: BrokerServerOptions): Promise<BrokerServer> {
    const s = opts.settings;
    const credentials = serverCredentials({ certFile: s.tlsCertFile, keyFile: s.tlsKeyFile, clientCaFile: s.tlsClientCaFile });
    let metrics: BrokerMetrics | undefined;
    const interceptors = [
      authInterceptor({
        tokens: opts.tokens ?? (() => undefined),
        roles: serviceRoles({ worker: ProxyBroker.typeName, admin: ProxyAdmin.typeName }),
        onRefused: (code, method) => metrics?.authRefused.inc({ code: grpc.status[code], method }),
      }),
    ];
    const create = () =>
      new grpc.Server({
        "grpc.keepalive_time_ms": s.keepaliveTimeMs,
        "grpc.keepalive_timeout_ms": s.keepaliveTimeoutMs,
        "grpc.keepalive_permit_without_calls": 1,
        "grpc.http2.min_ping_interval_without_data_ms": 5_000,
        "grpc.max_receive_message_length": s.maxMessageBytes,
        "grpc.max_concurrent_streams": s.maxStreamsPerConnection,
        interceptors,
      });
    const bind = (server: grpc.Server, address: string) =>
      new Promise<number>((resolve, reject) => server.bindAsync(address, credentials, (err, p) => (err ? reject(err) : resolve(p))));
    const server = create();
    const port = await bind(server, s.listenAddress);
    let admin: { server: grpc.Server; port: number } | undefined;
    if (s.adminListenAddress !== "") {
      const adminServer = create();
      admin = {
        server: adminServer,
        port: await bind(adminServer, s.adminListenAddress).catch((err: unknown) => {
          server.forceShutdown();
          throw err;
        }),
      };
    }
    const broker = new BrokerServer(server, opts, port, admin);
    metrics = broker.metrics;
    broker.register();
    broker.watchStore();
    broker.reservations.start();
    return broker;
  }

  /**
   * Take back from their holders the leases held through this broker's streams on pairs now
   * reserved for another (silent) worker: the holder is told at once (LeaseLost REVOKED) and stops
   * using the proxy, and the lease is released here, so the pair is paced from now and free for
   * the silent worker's hand-over (docs/spec.md §7).
   */
  private async revokeReserved(pool: string, reserved: ReservationMap): Promise<void> {
    if (this.held.size === 0) return;
    const { policies } = await this.engine.policySet(pool);
    const taken = this.held.takeReserved(pool, reserved, (domainKey) => shareKeyOf(policies, domainKey));
    for (const { leaseId, lease } of taken) {
      lease.tell();
      await this.engine
        .release({
          leaseId,
          fencingToken: lease.fencingToken,
          outcome: { kind: "ABANDONED", httpStatus: 0, latencyMs: 0, retryAfterMs: 0 },
        })
        .catch(() => undefined);
    }
    if (taken.length > 0) {
      this.opts.logger?.info(
        { pool, leases: taken.map(({ lease }) => ({ worker: lease.workerId, proxy: lease.proxyId, domain: lease.domainKey })) },
        `pool ${pool}: revoked ${taken.length} lease(s) on pairs reserved for silent workers`,
      );
    }
  }

  private register(): void {
    const s = this.opts.settings;
    const ctx: BrokerContext = {
      store: this.opts.store,
      engine: this.engine,
      limits: {
        ttlMinMs: s.ttlMinMs,
        ttlMaxMs: s.ttlMaxMs,
        maxWaitLimitMs: s.maxWaitLimitMs,
        maxRetryAfterMs: s.maxRetryAfterMs,
        maxInFlightPerStream: s.maxInFlightPerStream,
      },
      policyDefaults: this.defaults,
      workerActiveWindowMs: s.workerActiveWindowMs,
      workerAbsentAfterMs: s.workerAbsentAfterMs,
      reserveIntervalMs: RESERVATIONS_MS,
      fallbackWindowMs: s.fallbackWindowMs,
      domainUses: this.domainUses,
      clock: this.opts.clock ?? Date.now,
      metrics: this.metrics,
      reportBudget: new ReportBudget({ perMinute: s.reportOutcomesPerMinute, clock: this.opts.clock ?? Date.now }),
      grants: new GrantHub(),
      counts: this.counts,
      ...(this.opts.logger?.isLevelEnabled("debug") === true ? { debugLog: this.opts.logger } : {}),
      ...(this.opts.healthPass === undefined ? {} : { healthPass: this.opts.healthPass }),
      ...(this.opts.probeNew === undefined ? {} : { probeNew: this.opts.probeNew }),
      ...(this.opts.refreshSource === undefined ? {} : { refreshSource: this.opts.refreshSource }),
      ...(this.opts.readSourceHeaders === undefined ? {} : { readSourceHeaders: this.opts.readSourceHeaders }),
      isDraining: () => this.draining,
      streams: this.streams,
      held: this.held,
    };
    addService(this.server, ProxyBroker, brokerHandlers(ctx));
    addService(this.admin?.server ?? this.server, ProxyAdmin, adminHandlers(ctx));
    for (const server of this.admin === undefined ? [this.server] : [this.server, this.admin.server]) {
      this.health.addToServer(server);
      addReflection(server);
    }
  }

  /**
   * Health follows the store: NOT_SERVING while it is unreachable. When the store's server changed
   * (a Redis restart or failover: writes may be lost), grants are held on every pool served.
   */
  private watchStore(): void {
    let last = true;
    const check = async () => {
      const ok = this.draining ? false : await this.opts.store.ping().catch(() => false);
      if (ok !== last) for (const svc of SERVICES) this.health.setStatus(svc, ok ? "SERVING" : "NOT_SERVING");
      last = ok;
      // holds grants on every pool served when the server changed and may have lost writes; tried
      // again at the next check when it fails. Then the pools' hold state and longest TTL lately.
      if (ok) {
        await this.engine.checkServer().catch(() => undefined);
        await this.engine.refreshHolds().catch(() => undefined);
      }
    };
    void check();
    this.storeTimer = setInterval(() => void check(), STORE_CHECK_MS);
    this.storeTimer.unref();
  }

  /**
   * Drain and stop: refuse new work (UNAVAILABLE), answer waiting acquires with UNAVAILABLE, let
   * in-flight renews and releases finish for up to `graceMs`, then close every stream and stop.
   */
  async shutdown(graceMs: number): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    if (this.storeTimer !== undefined) clearInterval(this.storeTimer);
    this.reservations.stop();
    for (const svc of SERVICES) this.health.setStatus(svc, "NOT_SERVING");
    this.engine.rejectWaiters(new BrokerError(grpc.status.UNAVAILABLE, "broker is shutting down"));
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && [...this.streams].some((h) => h.inFlight() > 0)) {
      await new Promise((r) => setTimeout(r, 10));
    }
    for (const h of this.streams) h.close("broker is shutting down");
    const stop = (server: grpc.Server) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(
          () => {
            server.forceShutdown();
            resolve();
          },
          Math.max(0, deadline - Date.now()),
        );
        force.unref();
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
    await Promise.all([stop(this.server), ...(this.admin === undefined ? [] : [stop(this.admin.server)])]);
  }
}
