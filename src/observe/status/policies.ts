/**
 * The domain policies of a pool as the status page lists them: the pattern, the domain-key group
 * and the isolation group (G8) with its affinity window.
 */
import type { StorePolicies } from "@proxybroker/sdk/engine";
import { isolationGroupOf } from "@proxybroker/sdk/model";

/** Policies listed at most (by pattern). */
const MAX_POLICIES = 200;

export interface PolicyRow {
  readonly pattern: string;
  /** The domain-key group ("" = each host is its own key). */
  readonly group: string;
  /** The isolation group ("" = none). */
  readonly isolationGroup: string;
  /** The policy's own affinity window, ms (0 = none; the group's is the longest of its policies'). */
  readonly affinityWindowMs: number;
}

export async function policyRows(store: StorePolicies, pool: string): Promise<PolicyRow[]> {
  const { policies } = await store.listPolicies(pool);
  return [...policies]
    .sort((a, b) => a.pattern.localeCompare(b.pattern))
    .slice(0, MAX_POLICIES)
    .map((p) => ({ pattern: p.pattern, group: p.group, isolationGroup: isolationGroupOf(p), affinityWindowMs: p.affinityWindowMs ?? 0 }));
}
