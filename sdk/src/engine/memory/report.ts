/**
 * Internal to the in-memory engine: an outcome observed without a lease of this store (an SDK's
 * fallback pool replaying what it saw), applied like a release's outcome.
 */
import type { OutcomeReport } from "../../model/model.js";
import type { EngineState } from "./engine-state.js";
import { applyOutcome } from "./outcome.js";
import { pairOf } from "./pair.js";

/** Apply a reported outcome; false when the pool does not know the proxy. */
export function reportOutcome(state: EngineState, pool: string, report: OutcomeReport, now: number): boolean {
  const p = state.findPool(pool);
  if (p === undefined || !p.proxies.has(report.proxyId)) return false;
  const domain = p.domain(report.domainKey);
  const pair = pairOf(domain, report.proxyId);
  pair.banTtlMs = report.banTtlMs;
  applyOutcome(state.ctx, p, domain, report.proxyId, pair, report.outcome, now, true);
  return true;
}
