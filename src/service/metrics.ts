import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** One sample of the domain pacing gauge. */
export interface PacingSample {
  readonly pool: string;
  readonly domain: string;
  readonly seconds: number;
}

/** The broker's Prometheus metrics, on a registry of their own (served by src/metrics-server.ts). */
export class BrokerMetrics {
  readonly registry = new Registry();
  readonly grants = new Counter({ name: "proxybroker_grants_total", help: "Leases granted", labelNames: ["pool"], registers: [this.registry] });
  readonly denials = new Counter({
    name: "proxybroker_denials_total",
    help: "Acquires denied (no eligible proxy within max_wait, invalid input, store unavailable)",
    labelNames: ["pool", "reason"],
    registers: [this.registry],
  });
  readonly renewals = new Counter({ name: "proxybroker_renewals_total", help: "Leases renewed", registers: [this.registry] });
  readonly releases = new Counter({ name: "proxybroker_releases_total", help: "Leases released, by outcome", labelNames: ["outcome"], registers: [this.registry] });
  readonly lost = new Counter({ name: "proxybroker_lost_total", help: "Renews and releases of leases no longer held", labelNames: ["reason"], registers: [this.registry] });
  readonly storeErrors = new Counter({ name: "proxybroker_store_unavailable_total", help: "Operations that failed because the store was unreachable", registers: [this.registry] });
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

  readonly healthLeader = new Gauge({ name: "proxybroker_health_leader", help: "1 while this broker holds the health checker's leader lease", registers: [this.registry] });
  readonly healthResults = new Counter({ name: "proxybroker_health_checks_total", help: "Health checks by result (pass, fail, error)", labelNames: ["result"], registers: [this.registry] });
  readonly callerGrants = new Counter({
    name: "proxybroker_caller_grants_total",
    help: "Leases granted, by the name of the caller's token (\"-\" = none); names come from AUTH_TOKENS_FILE only",
    labelNames: ["caller"],
    registers: [this.registry],
  });

  constructor(
    private readonly opts: {
      waiting: () => number;
      domainPacing: () => Promise<readonly PacingSample[]>;
      /** Whether the broker serves this pool (it has proxies): only those are label values. */
      servesPool: (pool: string) => boolean;
      defaultMetrics?: boolean;
    },
  ) {
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
   * `pool` as a label value: its name when the broker serves it, else "other" — a client can
   * name any pool, and label values must come from a bounded set.
   */
  poolLabel(pool: string): string {
    return this.opts.servesPool(pool) ? pool : "other";
  }

  /** A lease was granted in `pool` to a caller whose token is named `caller` ("" = none). */
  granted(pool: string, caller: string): void {
    this.grants.inc({ pool: this.poolLabel(pool) });
    this.callerGrants.inc({ caller: caller === "" ? "-" : caller });
  }
}
