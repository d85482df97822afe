import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import type { Settings } from "../../config/settings.js";
import { healthTargets } from "../../config/settings.js";
import { HealthChecker } from "../../health/checker.js";
import { HealthService } from "../../health/health-service.js";
import { probeProxy } from "../../health/probe.js";
import { SourceRefresher } from "../../health/sources/refresh.js";
import { headersReader, type HeadersReader } from "../../health/sources/headers.js";
import type { SourceRefresh } from "../../health/sources/refresh.js";
import { SourceRunner } from "../../health/sources/runner.js";
import type { HealthMetrics } from "../../observe/health-metrics.js";
import { log, messageOf, warn } from "./log.js";

/** The health checker of this replica, not started yet, and the line that says what it checks. */
export interface ProcessHealth {
  readonly service: HealthService;
  /** The pools' sources, refreshed while this replica leads the checker. */
  readonly sources: SourceRunner;
  /** One source's refresh now (ProxyAdmin.RefreshSource). */
  readonly refreshSource: SourceRefresh;
  /** Reads a source's headers file, as refreshes do (AddSource checks it). */
  readonly readSourceHeaders: HeadersReader;
  readonly describe: string;
}

/** How often the leader looks for a source whose interval has passed. */
const SOURCE_TICK_MS = 1_000;

/**
 * The health checker: on every replica with a check URL; the holder of the leader lease runs it.
 * Absent without check URLs.
 */
export function healthOf(opts: { settings: Settings; store: LeaseStore; metrics: HealthMetrics }): ProcessHealth | undefined {
  const { settings, store, metrics } = opts;
  const targets = healthTargets(settings);
  if (targets.size === 0) return undefined;
  const checker = new HealthChecker({
    store,
    targets,
    intervalMs: settings.healthCheckIntervalMs,
    timeoutMs: settings.healthCheckTimeoutMs,
    concurrency: settings.healthCheckConcurrency,
    probe: probeProxy,
    onResult: (_pool, result) => metrics.results.inc({ result }),
  });
  const service = new HealthService({
    store,
    checker,
    owner: `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`,
    leaderTtlMs: settings.healthLeaderTtlMs,
    intervalMs: settings.healthCheckIntervalMs,
    onLeader: (c) => {
      metrics.leader.set(c.leader ? 1 : 0);
      log(
        c.leader
          ? `health checker: this broker leads (term ${c.term})`
          : `health checker: standing by${c.holder !== "" ? ` (${c.holder} leads)` : ""}`,
      );
    },
    onError: (err) => warn(`health checker: ${messageOf(err)}`),
  });
  const readHeaders = headersReader(settings.sourceHeadersDir);
  const refresher = new SourceRefresher({
    store,
    maxShrink: settings.sourceMaxShrink,
    fetchTimeoutMs: settings.sourceFetchTimeoutMs,
    maxBytes: settings.sourceMaxBytes,
    readHeaders,
    // new proxies are checked at once, under this leader's term (in pools the checker checks)
    probe: (pool, ids) => Promise.resolve(service.checkNew(pool, ids)),
    onRefreshed: (source, o) => {
      metrics.sourceRefreshes.inc({ pool: source.pool, source: source.id, result: o.result });
      if (o.result === "ok") metrics.sourceProxies.set({ pool: source.pool, source: source.id }, o.listed);
      if (o.result !== "ok") warn(`source ${source.id} of pool ${source.pool}: ${o.result}: ${o.error}; nothing changed`);
      else if (o.added.length + o.removed.length > 0)
        log(`source ${source.id} of pool ${source.pool}: ${o.listed} listed, ${o.added.length} added, ${o.removed.length} removed`);
    },
    onError: (err) => warn(`source refresh: ${messageOf(err)}`),
  });
  const sources = new SourceRunner({
    store,
    refresher,
    pools: () => checker.pools,
    isLeader: () => service.leader,
    tickMs: SOURCE_TICK_MS,
    onError: (err) => warn(`source refresh: ${messageOf(err)}`),
  });
  const describe = `health checker: ${[...targets].map(([pool, url]) => `${pool} → ${url}`).join(", ")} every ${settings.healthCheckIntervalMs} ms, one replica at a time (leader lease ${settings.healthLeaderTtlMs} ms)`;
  return { service, sources, refreshSource: (source) => refresher.refresh(source), readSourceHeaders: readHeaders, describe };
}
