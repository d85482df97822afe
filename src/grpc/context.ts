import type { Logger } from "pino";
import type { PolicyDefaults } from "@proxybroker/sdk/model";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import type { HealthPass } from "../health/pass.js";
import type { SourceRefresh } from "../health/sources/refresh.js";
import type { HeadersReader } from "../health/sources/headers.js";
import type { DomainUseCache } from "../lease/domain-use-cache.js";
import type { HeldLeases } from "../lease/held-leases.js";
import type { LeaseEngine } from "../lease/lease-engine.js";
import type { BrokerCounts } from "../observe/counts.js";
import type { GrantHub } from "../observe/grant-hub.js";
import type { BrokerMetrics } from "../observe/metrics.js";
import type { ReportBudget } from "./report-budget.js";
import type { RequestLimits } from "./validate.js";

/** An open Lease stream, as the shutdown sequence sees it. */
export interface StreamHandle {
  /** Requests received and not answered yet. */
  inFlight(): number;
  /** End the stream with UNAVAILABLE (shutdown). */
  close(message: string): void;
}

/** What the gRPC handlers share: built once by the server wiring. */
/** Probe proxies just added to `pool` (fire and forget). */
export type ProbeNew = (pool: string, ids: readonly string[]) => void;

export interface BrokerContext {
  readonly store: LeaseStore;
  readonly engine: LeaseEngine;
  readonly limits: RequestLimits;
  /** What unset policy fields mean. */
  readonly policyDefaults: PolicyDefaults;
  readonly workerActiveWindowMs: number;
  /** A worker not heard this long counts as silent (WORKER_ABSENT_AFTER_MS) … */
  readonly workerAbsentAfterMs: number;
  /** … and its claim is reserved within this much more (how often reservations are brought up to date). */
  readonly reserveIntervalMs: number;
  /** How long a silent worker's share stays reserved (the most a worker serves from fallback), and a domain-key use listed. */
  readonly fallbackWindowMs: number;
  /** The domain-keys workers used lately (pool snapshots list them). */
  readonly domainUses: DomainUseCache;
  readonly clock: () => number;
  readonly metrics: BrokerMetrics;
  /** Reported outcomes each caller may still have applied. */
  readonly reportBudget: ReportBudget;
  /** The leases this broker grants, for WatchEvents. */
  readonly grants: GrantHub;
  /** The last minute's grants per (pool, domain-key) and per (pool, worker), and outcomes per kind ("" scope). */
  readonly counts: BrokerCounts;
  /**
   * Where the debug line of each lease call goes; set only when the log's level is debug (or
   * lower), so that at info the hot path builds no log fields at all.
   */
  readonly debugLog?: Logger;
  /** One health-check pass over a pool, with progress (CheckProxies); absent: no checker configured. */
  readonly healthPass?: HealthPass;
  /** Probe proxies just added to a pool at once (their exit IP, G9); absent: no health checker. */
  readonly probeNew?: ProbeNew;
  /** Refresh one source now (RefreshSource); absent: no health checker configured. */
  readonly refreshSource?: SourceRefresh;
  /** Reads a source's headers file as refreshes do (inside SOURCE_HEADERS_DIR); absent: none is read. */
  readonly readSourceHeaders?: HeadersReader;
  /** True once SIGTERM arrived: new work is refused with UNAVAILABLE. */
  readonly isDraining: () => boolean;
  /** The open Lease streams, for the shutdown sequence. */
  readonly streams: Set<StreamHandle>;
  /** The leases held through those streams, to revoke those a silent worker's reservation takes (held-leases.ts). */
  readonly held: HeldLeases;
}
