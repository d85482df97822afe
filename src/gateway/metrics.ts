import { Counter, Gauge, Histogram, Registry } from "prom-client";

/** How a request reached the gateway: plain HTTP, inside an intercepted tunnel, or a CONNECT tunnel. */
export type RequestKind = "http" | "intercepted" | "tunnel";

/**
 * The gateway's metrics (`GATEWAY_METRICS_ADDRESS`, `GET /metrics`): requests by kind and
 * outcome (the lease's outcome, or `refused_<status>` when no lease was given), open tunnels,
 * and the time the gateway added before a request left for its proxy (mostly the wait for a
 * lease).
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: "proxybroker_gateway_requests_total",
    help: "Requests (CONNECT tunnels count once), by kind and outcome",
    labelNames: ["kind", "outcome"],
    registers: [this.registry],
  });
  private readonly added = new Histogram({
    name: "proxybroker_gateway_added_seconds",
    help: "Time from a request's arrival to its lease (the wait for a free proxy included)",
    labelNames: ["kind"],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
    registers: [this.registry],
  });

  private readonly withoutCredentials = new Counter({
    name: "proxybroker_gateway_browser_without_credentials_total",
    help: "Requests of browsers that sent no proxy credentials to a gateway that asks none: their session and other parameters, if any, were lost (set GATEWAY_CREDENTIALS=required)",
    registers: [this.registry],
  });

  private readonly reuses = new Counter({
    name: "proxybroker_gateway_kept_lease_uses_total",
    help: "Requests sent through a kept lease (no round trip to the broker), by kind",
    labelNames: ["kind"],
    registers: [this.registry],
  });

  /** The histogram and counter of each kind, their labels hashed once. */
  private readonly byKind = new Map<RequestKind, { added: Histogram.Internal<"kind">; reuses: Counter.Internal }>();

  constructor(gauges: { readonly openTunnels: () => number; readonly keptLeases: () => number }) {
    new Gauge({
      name: "proxybroker_gateway_open_tunnels",
      help: "CONNECT tunnels open now (tunnel mode: each holds a lease)",
      registers: [this.registry],
      collect() {
        this.set(gauges.openTunnels());
      },
    });
    new Gauge({
      name: "proxybroker_gateway_kept_leases",
      help: "Reusable leases kept idle now for the next request of their host",
      registers: [this.registry],
      collect() {
        this.set(gauges.keptLeases());
      },
    });
  }

  /** The counter of each (kind, outcome), its labels hashed once (a few dozen at most). */
  private readonly doneBy = new Map<string, Counter.Internal>();

  done(kind: RequestKind, outcome: string): void {
    const key = `${kind} ${outcome}`;
    let c = this.doneBy.get(key);
    if (c === undefined) {
      c = this.requests.labels({ kind, outcome });
      this.doneBy.set(key, c);
    }
    c.inc();
  }

  browserWithoutCredentials(): void {
    this.withoutCredentials.inc();
  }

  /** A request got its lease after `seconds`; `kept`: a kept lease (no round trip to the broker). */
  leased(kind: RequestKind, seconds: number, kept = false): void {
    let of = this.byKind.get(kind);
    if (of === undefined) {
      of = { added: this.added.labels({ kind }), reuses: this.reuses.labels({ kind }) };
      this.byKind.set(kind, of);
    }
    of.added.observe(seconds);
    if (kept) of.reuses.inc();
  }
}
