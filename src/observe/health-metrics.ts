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

  /** Serve them from `registry`. */
  registerIn(registry: Registry): void {
    registry.registerMetric(this.leader);
    registry.registerMetric(this.results);
  }
}
