import { Counter, Gauge } from "prom-client";
import type { Registry } from "prom-client";

/**
 * The health checker's metrics. Made before the checker and the server, so neither waits for the
 * other: the checker counts into them, the server's registry serves them.
 */
export class HealthMetrics {
  readonly leader = new Gauge({
    name: "proxybroker_health_leader",
    help: "1 while this broker holds the health checker's leader lease",
    registers: [],
  });
  readonly results = new Counter({
    name: "proxybroker_health_checks_total",
    help: "Health checks by result (pass, fail, error)",
    labelNames: ["result"],
    registers: [],
  });

  readonly sourceRefreshes = new Counter({
    name: "proxybroker_source_refreshes_total",
    help: "Source refreshes by pool, source and result (ok, fetch_error, malformed, shrink; all but ok changed nothing)",
    labelNames: ["pool", "source", "result"],
    registers: [],
  });
  readonly sourceProxies = new Gauge({
    name: "proxybroker_source_listed_proxies",
    help: "Proxies in a source's last list accepted",
    labelNames: ["pool", "source"],
    registers: [],
  });

  /** Serve them from `registry`. */
  registerIn(registry: Registry): void {
    registry.registerMetric(this.leader);
    registry.registerMetric(this.results);
    registry.registerMetric(this.sourceRefreshes);
    registry.registerMetric(this.sourceProxies);
  }
}
