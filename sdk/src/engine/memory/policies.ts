/**
 * Internal to the in-memory engine: domain policies of a pool, by pattern, with the version
 * that acquires present, and the sets they replaced (kept `keepMs`, at most HISTORY_MAX).
 */
import type { DomainPolicySpec, PolicySet } from "../../model/model.js";
import { compareIds } from "./ids.js";
import type { PoolState } from "./pool-state.js";

/** Replaced policy sets kept at most (older ones are dropped first). */
export const HISTORY_MAX = 64;

/** When and for how long a change keeps the set it replaces. */
export interface PolicyChange {
  readonly now: number;
  readonly keepMs: number;
}

function sorted(pool: PoolState): DomainPolicySpec[] {
  const policies = [...pool.policies.values()].map((p) => ({ ...p }));
  return policies.sort((a, b) => compareIds(a.pattern, b.pattern));
}

/** Keep the current set as history (before it changes) and drop what is too old. */
function retire(pool: PoolState, change: PolicyChange): void {
  pool.history = [{ retiredAt: change.now, policies: sorted(pool) }, ...pool.history]
    .filter((h) => h.retiredAt + change.keepMs > change.now)
    .slice(0, HISTORY_MAX);
}

/** Create or replace the policy with this pattern; the version changes. */
export function setPolicy(pool: PoolState, policy: DomainPolicySpec, change: PolicyChange): void {
  retire(pool, change);
  pool.policies.set(policy.pattern, { ...policy });
  pool.bumpPolicyVersion();
}

/** Delete by pattern; the version changes only when something was deleted. */
export function deletePolicy(pool: PoolState | undefined, pattern: string, change: PolicyChange): boolean {
  if (pool === undefined || !pool.policies.has(pattern)) return false;
  retire(pool, change);
  pool.policies.delete(pattern);
  pool.bumpPolicyVersion();
  return true;
}

/** The policies in pattern order, with the current version ("0" for a pool never configured). */
export function listPolicies(pool: PoolState | undefined, now: number, keepMs: number): PolicySet {
  if (pool === undefined) return { version: ".0", epoch: "", policies: [], history: [], proxies: 0 };
  const history = pool.history.filter((h) => h.retiredAt + keepMs > now);
  return { version: pool.policyVersion, epoch: pool.epoch, policies: sorted(pool), history, proxies: pool.proxies.size };
}
