import type { PolicyDefaults } from "@proxybroker/sdk/model";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import type { LeaseEngine } from "./lease-engine.js";
import type { StreamHandle } from "./lease-stream.js";
import type { BrokerMetrics } from "./metrics.js";
import type { RequestLimits } from "./validate.js";
import type { ReportBudget } from "./report-budget.js";
import type { GrantHub } from "./grant-hub.js";
import type { MinuteCounts } from "./minute-counts.js";
import type { RecentRestrictions } from "./recent-restrictions.js";

/** What this broker counts for GetDomainStats and the status page. */
export interface BrokerCounts {
  readonly grantsByDomain: MinuteCounts;
  readonly grantsByWorker: MinuteCounts;
  readonly outcomes: MinuteCounts;
  readonly restrictions: RecentRestrictions;
}
import type { Logger } from "pino";

/** Progress of a health-check pass: after each proxy, and once at the start with `total`. */
export interface CheckProgressUpdate {
  readonly total: number;
  readonly checked: number;
  readonly passed: number;
  readonly failed: number;
  readonly errors: number;
  readonly proxyId: string;
  readonly result: "" | "pass" | "fail" | "error";
}

/** Run one health-check pass over `pool` now. */
export type HealthPass = (pool: string, onProgress: (p: CheckProgressUpdate) => void, signal: AbortSignal) => Promise<CheckProgressUpdate>;

/** What the gRPC handlers share: built once by the server wiring. */
export interface BrokerContext {
  readonly store: LeaseStore;
  readonly engine: LeaseEngine;
  readonly limits: RequestLimits;
  /** What unset policy fields mean. */
  readonly policyDefaults: PolicyDefaults;
  readonly workerActiveWindowMs: number;
  /** How long a silent worker's share stays reserved (the most a worker serves from fallback). */
  readonly fallbackWindowMs: number;
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
  /** True once SIGTERM arrived: new work is refused with UNAVAILABLE. */
  readonly isDraining: () => boolean;
  /** The open Lease streams, for the shutdown sequence. */
  readonly streams: Set<StreamHandle>;
}
