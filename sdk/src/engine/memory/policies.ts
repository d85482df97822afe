/**
 * Internal to the in-memory engine: domain policies of a pool, by pattern, with the version
 * that acquires present.
 */
import type { DomainPolicySpec, PolicySet } from "../../model/model.js";
import { compareIds } from "./ids.js";
import type { PoolState } from "./pool-state.js";

/** Create or replace the policy with this pattern; the version changes. */
export function setPolicy(pool: PoolState, policy: DomainPolicySpec): void {
  pool.policies.set(policy.pattern, { ...policy });
  pool.bumpPolicyVersion();
}

/** Delete by pattern; the version changes only when something was deleted. */
export function deletePolicy(pool: PoolState | undefined, pattern: string): boolean {
  if (pool === undefined || !pool.policies.delete(pattern)) return false;
  pool.bumpPolicyVersion();
  return true;
}

/** The policies in pattern order, with the current version ("0" for a pool never configured). */
export function listPolicies(pool: PoolState | undefined): PolicySet {
  if (pool === undefined) return { version: "0", policies: [] };
  const policies = [...pool.policies.values()].map((p) => ({ ...p }));
  policies.sort((a, b) => compareIds(a.pattern, b.pattern));
  return { version: pool.policyVersion, policies };
}
