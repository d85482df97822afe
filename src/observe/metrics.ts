import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { HealthMetrics } from "./health-metrics.js";
import type { ProxyCounts } from "./proxy-counts.js";
import type { Recovery } from "./recovery-times.js";

/** One sample of the domain pacing gauge. */
export interface PacingSample {
  readonly pool: string;
  readonly domain: string;
  readonly seconds: number;
}

/** The broker's Prometheus metrics, on a registry of their own (served by src/observe/metrics-server.ts). */
export class BrokerMetrics {
  readonly registry = new Registry();
  readonly grants = new Counter({
    name: "proxybroker_grants_total",
    help: "Leases granted",
    labelNames: ["pool"],
    registers: [this.registry],
  });
  readonly denials = new Counter({
    name: "proxybroker_denials_total",
    help: "Acquires denied, by reason: NO_PROXY_AVAILABLE (none within max_wait), INVALID_ARGUMENT, UNAVAILABLE (store away), DRAINING, TOO_MANY_WAITING, TOO_MANY_IN_FLIGHT, UNAUTHENTICATED, other gRPC codes",
    labelNames: ["pool", "reason"],
    registers: [this.registry],
  });
  readonly reported = new Counter({
    name: "proxybroker_reported_outcomes_total",
    help: "Outcomes reported through ReportOutcomes (seen in SDK fallback pools) and accepted, by kind (the store skips those of unknown proxies)",
    labelNames: ["kind"],
    registers: [this.registry],
  });
  readonly renewals = new Counter({ name: "proxybroker_renewals_total", help: "Leases renewed", registers: [this.registry] });
  readonly releases = new Counter({
    name: "proxybroker_releases_total",
    help: "Leases released, by outcome",
    labelNames: ["outcome"],
    registers: [this.registry],
  });
  readonly lost = new Counter({
    name: "proxybroker_lost_total",
    help: "Renews and releases of leases no longer held",
    labelNames: ["reason"],
    registers: [this.registry],
  });
  readonly storeErrors = new Counter({
    name: "proxybroker_store_unavailable_total",
    help: "Operations that failed because the store was unreachable",
    registers: [this.registry],
  });
  readonly authRefused = new Counter({
    name: "proxybroker_auth_refused_total",
    help: "Calls refused for a missing or unknown token (UNAUTHENTICATED) or a worker token on ProxyAdmin (PERMISSION_DENIED)",
    labelNames: ["code", "method"],
    registers: [this.registry],
  });
  readonly openStreams = new Gauge({ name: "proxybroker_open_lease_streams", help: "Open Lease streams", registers: [this.registry] });
  readonly acquireSeconds = new Histogram({
    name: "proxybroker_acquire_seconds",
    help: "Time from acquire request to answer, waiting included",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [this.registry],
  });

  readonly waitSeconds = new Histogram({
    name: "proxybroker_wait_seconds",
    help: "Time acquires waited inside the broker (max_wait) for a proxy, by result (granted, denied); acquires answered at once are not counted",
    labelNames: ["result"],
    buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });

  readonly callerGrants = new Counter({
    name: "proxybroker_caller_grants_total",
    help: 'Leases granted, by the name of the caller\'s token ("-" = none); names come from AUTH_TOKENS_FILE only',
    labelNames: ["caller"],
    registers: [this.registry],
  });

  constructor(
    private readonly opts: {
      waiting: () => number;
      domainPacing: () => Promise<readonly PacingSample[]>;
      /** Whether the broker serves this pool (it has proxies): only those are label values. */
      servesPool: (pool: string) => boolean;
      /** The pools this broker serves. */
      pools: () => readonly string[];
      /** A pool's proxies by tier and state. */
      proxies: (pool: string) => Promise<ProxyCounts>;
      /** Leases granted through this broker that it has not seen end. */
      liveLeases: () => number;
      /** Bans, cool-downs and quarantines that began since the last call, pool-wide. */
      recoveries: () => Promise<readonly Recovery[]>;
      /** Until when grants are held in a pool after a loss of the store's state (epoch ms; 0 = not held). */
      heldUntil?: (pool: string) => number;
      defaultMetrics?: boolean;
      /** The health checker's metrics (made by the process before the checker); absent: a set of zeros. */
      health?: HealthMetrics;
    },
  ) {
    (opts.health ?? new HealthMetrics()).registerIn(this.registry);
    // one listing of a pool's proxies per scrape, for both gauges that count them
    const counted = oncePerScrape(opts.proxies);
    poolGauge(this.registry, {
      name: "proxybroker_proxies",
      help: 'Proxies of the pools this broker serves, by pool, tier ("" = none) and state (pool-wide; the first 50,000 of a pool are counted)',
      labelNames: ["tier", "state"],
      pools: opts.pools,
      async fill(pool, set) {
        const c = await counted(pool);
        for (const [tier, states] of Object.entries(c.byTier)) {
          for (const [state, n] of Object.entries(states)) set({ tier, state }, n);
        }
      },
    });
    poolGauge(this.registry, {
      name: "proxybroker_exit_ips",
      help: 'Exit IPs the health checks showed, by pool and by how many proxies share each ("1", "2", "3-5", "6+"); proxies with none known under "unknown" (G9)',
      labelNames: ["proxies"],
      pools: opts.pools,
      async fill(pool, set) {
        const c = await counted(pool);
        const buckets: Record<string, number> = { "1": c.exits.distinct - c.exits.shared.length, "2": 0, "3-5": 0, "6+": 0 };
        for (const x of c.exits.shared) {
          const b = x.proxies === 2 ? "2" : x.proxies <= 5 ? "3-5" : "6+";
          buckets[b] = (buckets[b] ?? 0) + 1;
        }
        for (const [proxies, n] of Object.entries(buckets)) set({ proxies }, n);
        set({ proxies: "unknown" }, c.exits.unknown);
      },
    });
    new Gauge({
      name: "proxybroker_live_leases",
      help: "Leases granted through this broker and not yet ended as far as it knows (released through it, or past their last known expiry); sum over replicas",
      registers: [this.registry],
      collect() {
        this.set(opts.liveLeases());
      },
    });
    const recovery = new Histogram({
      name: "proxybroker_recovery_seconds",
      help: "How long a proxy stays out after a ban (for its domain-key), a cool-down (RATE_LIMITED) or a quarantine, by kind; read from the pools' event streams at each scrape, so pool-wide and the same on every replica",
      labelNames: ["kind"],
      buckets: [1, 5, 15, 30, 60, 300, 600, 1800, 3600, 7200, 21600, 86400],
      registers: [this.registry],
      async collect() {
        try {
          for (const r of await opts.recoveries()) recovery.observe({ kind: r.kind }, r.seconds);
        } catch {
          // the store is unreachable: observed at the next scrape
        }
      },
    });
    new Gauge({
      name: "proxybroker_pool_grants_held_until_seconds",
      help: "Until when grants are held in a pool after the store lost (or may have lost) its state, in Unix seconds; 0 = not held. The hold lasts the longest lease TTL granted there lately",
      labelNames: ["pool"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const pool of opts.pools()) this.set({ pool }, (opts.heldUntil?.(pool) ?? 0) / 1000);
      },
    });
    new Gauge({
      name: "proxybroker_waiting_acquires",
      help: "Acquires waiting inside this broker (max_wait)",
      registers: [this.registry],
      collect() {
        this.set(opts.waiting());
      },
    });
    new Gauge({
      name: "proxybroker_domain_pacing_interval_seconds",
      help: "The interval grants of one proxy for a domain-key run under now (policy and adaptive pacing), for policy groups and adapted domain-keys of the pools this broker serves (bounded)",
      labelNames: ["pool", "domain"],
      registers: [this.registry],
      async collect() {
        this.reset();
        try {
          for (const s of await opts.domainPacing()) this.set({ pool: s.pool, domain: s.domain }, s.seconds);
        } catch {
          // the store is unreachable: no samples this time (the store metrics say why)
        }
      },
    });
    if (opts.defaultMetrics === true) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * `pool` as a request names it ("" is the default pool) as a label value: its name when the
   * broker serves it, else "other" — a client can name any pool, and label values must come from
   * a bounded set.
   */
  poolLabel(pool: string): string {
    const name = pool === "" ? "default" : pool;
    return this.opts.servesPool(name) ? name : "other";
  }

  /** An acquire was denied; `reason` comes from a bounded set (the broker's reasons and gRPC code names). */
  denied(pool: string, reason: string): void {
    this.denials.inc({ pool: this.poolLabel(pool), reason });
  }

  /** A lease was granted in `pool` to a caller whose token is named `caller` ("" = none). */
  granted(pool: string, caller: string): void {
    this.grants.inc({ pool: this.poolLabel(pool) });
    this.callerGrants.inc({ caller: caller === "" ? "-" : caller });
  }
}

/** A gauge with a `pool` label, filled per pool at each scrape; an unreachable store leaves it empty. */
function poolGauge<L extends string>(
  registry: Registry,
  g: {
    readonly name: string;
    readonly help: string;
    readonly labelNames: readonly L[];
    readonly pools: () => readonly string[];
    readonly fill: (pool: string, set: (labels: Record<L, string>, value: number) => void) => Promise<void>;
  },
): void {
  new Gauge({
    name: g.name,
    help: g.help,
    labelNames: ["pool", ...g.labelNames],
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const pool of g.pools()) await g.fill(pool, (labels, value) => this.set({ ...labels, pool }, value));
      } catch {
        // the store is unreachable: no samples this time
      }
    },
  });
}

/**
 * `read` of a pool shared by the calls made while one is in flight: a scrape collects every gauge
 * at once (prom-client's `Promise.all`), so the gauges of one scrape read a pool once.
 */
function oncePerScrape<T>(read: (pool: string) => Promise<T>): (pool: string) => Promise<T> {
  const inFlight = new Map<string, Promise<T>>();
  return (pool) => {
    const running = inFlight.get(pool);
    if (running !== undefined) return running;
    const value = read(pool).finally(() => inFlight.delete(pool));
    inFlight.set(pool, value);
    return value;
  };
}
