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

  constructor(openTunnels: () => number) {
    new Gauge({
      name: "proxybroker_gateway_open_tunnels",
      help: "CONNECT tunnels open now (tunnel mode: each holds a lease)",
      registers: [this.registry],
      collect() {
        this.set(openTunnels());
      },
    });
  }

  done(kind: RequestKind, outcome: string): void {
    this.requests.inc({ kind, outcome });
  }

  browserWithoutCredentials(): void {
    this.withoutCredentials.inc();
  }

  leased(kind: RequestKind, seconds: number): void {
    this.added.observe({ kind }, seconds);
  }
}
