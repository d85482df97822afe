import type { PolicyDefaults } from "@proxybroker/sdk/model";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import type { LeaseEngine } from "./lease-engine.js";
import type { StreamHandle } from "./lease-stream.js";
import type { BrokerMetrics } from "./metrics.js";
import type { RequestLimits } from "./validate.js";
import type { ReportBudget } from "./report-budget.js";

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
  /** True once SIGTERM arrived: new work is refused with UNAVAILABLE. */
  readonly isDraining: () => boolean;
  /** The open Lease streams, for the shutdown sequence. */
  readonly streams: Set<StreamHandle>;
}
