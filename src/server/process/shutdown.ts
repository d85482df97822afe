import type { Server } from "node:http";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import type { HealthService } from "../../health/health-service.js";
import type { BrokerServer } from "../broker-server.js";
import { log } from "./log.js";

/** What a shutdown stops, in this order. */
export interface Stoppable {
  readonly health: HealthService | undefined;
  /** The sources' refreshes (they run on the health checker's leader). */
  readonly sources?: { stop(): Promise<void> } | undefined;
  readonly server: BrokerServer;
  readonly metrics: Server | undefined;
  readonly store: LeaseStore;
}

/**
 * On the first SIGTERM or SIGINT: stop the health checker, drain the server (in-flight work gets
 * `graceMs`), close the metrics endpoint and the store, exit 0; past `graceMs` and a margin, exit
 * 1. Installed before the process says it listens, so a signal right after that line drains.
 */
export function drainOnSignals(parts: Stoppable, graceMs: number): void {
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: draining (up to ${graceMs} ms)`);
    setTimeout(() => process.exit(1), graceMs + 2_000).unref();
    void (async () => {
      await parts.sources?.stop();
      await parts.health?.stop();
      await parts.server.shutdown(graceMs);
      parts.metrics?.close();
      await parts.store.close().catch(() => undefined);
      log("stopped");
      process.exit(0);
    })();
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}
