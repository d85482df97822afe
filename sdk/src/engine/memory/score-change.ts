/**
 * Internal to the in-memory engine: a proxy's score change with its consequences (quarantine,
 * blacklist, index position), shared by outcomes and health checks.
 */
import type { HealthResult, ProxyView } from "../../model/model.js";
import { quarantineLengthMs, scoreAfterHealth } from "../../model/scoring.js";
import type { EngineContext } from "./context.js";
import type { PoolState } from "./pool-state.js";
import { viewOf, type ProxyRecord } from "./records.js";

/**
 * Set the score of `rec`. An ACTIVE proxy falling below the floor is blacklisted when it has
 * already been quarantined `maxQuarantines` times, else quarantined for the next length (with
 * jitter from the random source); otherwise an ACTIVE proxy moves in the index.
 */
export function changeScore(ctx: EngineContext, pool: PoolState, rec: ProxyRecord, score: number, now: number): void {
  const cfg = ctx.scoring;
  if (rec.state !== "ACTIVE" || score >= cfg.floor) {
    pool.rescore(rec, score);
    return;
  }
  if (rec.quarantineCount >= cfg.maxQuarantines) {
    pool.deactivate(rec, "BLACKLISTED", 0);
    pool.emit(now, { kind: "BLACKLIST", proxyId: rec.id, domainKey: "", detail: "" });
  } else {
    rec.quarantineCount += 1;
    const until = now + quarantineLengthMs(cfg, rec.quarantineCount, ctx.random());
    pool.deactivate(rec, "QUARANTINED", until);
    pool.emit(now, { kind: "QUARANTINE", proxyId: rec.id, domainKey: "", detail: String(until) });
  }
  rec.score = score;
}

/**
 * Apply one health check (SPEC §2). A pass returns a QUARANTINED proxy to ACTIVE with at least
 * `scoreAfterQuarantine`. Unknown proxy → undefined.
 */
export function applyHealth(ctx: EngineContext, pool: PoolState, id: string, result: HealthResult, now: number): ProxyView | undefined {
  const rec = pool.proxies.get(id);
  if (rec === undefined) return undefined;
  const score = scoreAfterHealth(ctx.scoring, rec.score, result);
  if (result === "pass" && rec.state === "QUARANTINED") {
    pool.activate(rec, Math.max(score, ctx.scoring.scoreAfterQuarantine));
  } else {
    changeScore(ctx, pool, rec, score, now);
  }
  return viewOf(rec);
}

/** Return to ACTIVE up to `limit` QUARANTINED proxies whose time is up (acquire step returnQuarantined). */
export function returnFromQuarantine(ctx: EngineContext, pool: PoolState, now: number, limit: number): void {
  for (let i = 0; i < limit; i++) {
    const due = pool.quarantine.popUpTo(now);
    if (due === undefined) return;
    const rec = pool.proxies.get(due.key);
    // scoreAfterQuarantine, or the proxy's own score when higher (an admin's ban for a while keeps it)
    if (rec !== undefined && rec.state === "QUARANTINED") pool.activate(rec, Math.max(rec.score, ctx.scoring.scoreAfterQuarantine));
  }
}
