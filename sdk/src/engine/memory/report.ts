/**
 * Internal to the in-memory engine: an outcome observed without a lease of this store (an SDK's
 * fallback pool replaying what it saw), applied like a release's outcome — only on a pair its
 * reporter claimed or is recorded as holding (held-pairs.ts).
 */
import type { OutcomeReport, ReportFate } from "../../model/model.js";
import type { EngineState } from "./engine-state.js";
import { applyOutcome } from "./outcome.js";
import { pairOf } from "./pair.js";

/**
 * Apply an outcome `reporter` reported: "unknown" when the pool does not know the proxy,
 * "not-held" when it is not claimed and `reporter` is not recorded as holding the pair.
 */
export function reportOutcome(state: EngineState, pool: string, report: OutcomeReport, reporter: string, now: number): ReportFate {
  const p = state.findPool(pool);
  if (p === undefined || !p.proxies.has(report.proxyId)) return "unknown";
  if (report.claimed !== true && (reporter === "" || !p.held.held(reporter, report.domainKey, report.proxyId, now))) return "not-held";
  const domain = p.domain(report.domainKey);
  const pair = pairOf(domain, report.proxyId);
  pair.banTtlMs = report.banTtlMs;
  applyOutcome(state.ctx, p, domain, report.proxyId, pair, report.outcome, now, true);
  return "applied";
}
