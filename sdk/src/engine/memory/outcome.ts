/**
 * Internal to the in-memory engine: applying a release's outcome to the proxy and its pair
 * (store-semantics §release, "Applying an outcome").
 */
import type { OutcomeInput } from "../../model/model.js";
import { adaptOnRateLimited, adaptOnSuccess, isFailure, nextEwma, rateLimitBackoffMs, scoreAfterOutcome } from "../../model/scoring.js";
import type { EngineContext } from "./context.js";
import { refreshBusy } from "./pair.js";
import type { DomainState, PoolState } from "./pool-state.js";
import type { PairState } from "./records.js";
import { changeScore } from "./score-change.js";

/**
 * Apply `outcome` on the pair (proxyId, domain). A removed proxy gets no scoring, but the pair
 * still records bans and cool-downs, and its busy entry is recomputed.
 */
export function applyOutcome(
  ctx: EngineContext,
  pool: PoolState,
  domain: DomainState,
  proxyId: string,
  pair: PairState,
  outcome: OutcomeInput,
  now: number,
  /** Seen without a lease of this store (ReportOutcomes): never takes the score below the floor. */
  reported = false,
): void {
  const cfg = ctx.scoring;
  const rec = pool.proxies.get(proxyId);
  if (rec !== undefined) {
    if (outcome.kind === "SUCCESS") rec.successCount += 1;
    else if (isFailure(outcome.kind)) rec.failureCount += 1;
    if (outcome.latencyMs > 0) rec.latencyEwmaMs = nextEwma(cfg, rec.latencyEwmaMs, outcome.latencyMs);
  }
  switch (outcome.kind) {
    case "SUCCESS":
      pair.rateLimits = 0;
      if (pair.pacing.adaptive) domain.adaptive = adaptOnSuccess(cfg.adaptive, domain.adaptive, pair.pacing, now);
      break;
    case "RATE_LIMITED":
      if (pair.pacing.adaptive) domain.adaptive = adaptOnRateLimited(cfg.adaptive, domain.adaptive, pair.pacing, now);
      pair.rateLimits += 1;
      pair.coolUntil = now + (outcome.retryAfterMs > 0 ? outcome.retryAfterMs : rateLimitBackoffMs(cfg, pair.rateLimits));
      pool.emit(now, { kind: "COOL_DOWN", proxyId, domainKey: domain.key, detail: String(pair.coolUntil) });
      break;
    case "BLOCKED":
      pair.banUntil = now + pair.banTtlMs;
      pool.emit(now, { kind: "BAN", proxyId, domainKey: domain.key, detail: String(pair.banUntil) });
      break;
    default:
      break;
  }
  if (rec !== undefined) {
    const score = scoreAfterOutcome(cfg, rec.score, outcome.kind);
    changeScore(ctx, pool, rec, reported ? Math.max(score, Math.min(rec.score, cfg.floor)) : score, now);
  }
  refreshBusy(domain, proxyId, pair, now);
}
