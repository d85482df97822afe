/**
 * Internal to the in-memory engine: what a health check records of a proxy's exit (G9,
 * store-semantics §exit IPs `recordHealth`): an answer through the proxy (pass or fail) marks it
 * probed; a new exit moves it there (the old one counts an hour more) and is recorded as an
 * `EXIT` event and an `exit-changed` audit entry.
 */
import type { HealthResult, NewAuditEntry, NewPoolEvent } from "../../model/model.js";
import type { EngineState } from "./engine-state.js";
import type { ExitChange } from "./exits.js";
import type { PoolState } from "./pool-state.js";

/** The event kind of an exit change. */
export const EXIT_EVENT = "EXIT";
/** The audit method of an exit change. */
export const EXIT_AUDIT_METHOD = "exit-changed";

/** How an exit change reads: `<old> -> <new>`, "none" for an exit not known before. */
export function exitChangeText(change: ExitChange): string {
  return `${change.from === "" ? "none" : change.from} -> ${change.to}`;
}

/** The pool event of an exit change. */
export function exitEvent(change: ExitChange): NewPoolEvent {
  return { kind: EXIT_EVENT, proxyId: change.proxyId, domainKey: "", detail: exitChangeText(change) };
}

/** The audit entry of an exit change in `pool` (no caller: the health checker's). */
export function exitAudit(pool: string, change: ExitChange): NewAuditEntry {
  return { actor: "", method: EXIT_AUDIT_METHOD, pool, detail: `${change.proxyId} ${exitChangeText(change)}` };
}

/** What one health check showed of the proxy `id`. */
export interface HealthExit {
  readonly id: string;
  readonly result: HealthResult;
  /** The exit the check saw ("" = none). */
  readonly exitIp: string;
  readonly now: number;
}

/** Record what the check showed of the proxy's exit (after its score, as the health check did before). */
export function recordExit(state: EngineState, pool: PoolState, seen: HealthExit): void {
  const rec = pool.proxies.get(seen.id);
  if (rec === undefined) return;
  if (seen.result !== "error") pool.exits.probed(seen.id);
  const change = pool.exits.showed(seen.id, seen.exitIp, seen.now);
  if (change === undefined) return;
  rec.exitIp = change.to;
  pool.emit(seen.now, exitEvent(change));
  const entry = exitAudit(pool.name, change);
  state.audit.append(seen.now, (id) => ({ id, at: seen.now, ...entry }));
}

/**
 * Exits another store knows (a fallback pool's snapshot of the broker's proxies): recorded as a
 * health check that saw them would record them, without probes, scores, events or audit.
 */
export function learnExits(pool: PoolState, members: readonly { readonly id: string; readonly exitIp: string }[], now: number): void {
  for (const m of members) {
    const rec = pool.proxies.get(m.id);
    const change = rec === undefined ? undefined : pool.exits.showed(m.id, m.exitIp, now);
    if (rec !== undefined && change !== undefined) rec.exitIp = change.to;
  }
}
