import { InvalidInputError } from "./domain-key.js";
import { normalizeGroup } from "./policy.js";
import { findPolicy } from "./policy.js";
import type { DomainPolicySpec, IsolationParams, PolicySet, RetiredPolicySet } from "./model.js";

/**
 * Isolation groups (G8): domain-keys whose policies name the same isolation group never hold one
 * proxy at the same time, and a proxy moves to another key of the group only the group's affinity
 * window after its last lease for the key it had ended.
 *
 * The store keeps, per (group, proxy), which domain-key holds the proxy and until when (the
 * lease's expiry, or its end, plus the window), written by the grant, the renewal and the release
 * of every lease of a grouped key. A policy change is the hard part: leases granted before it
 * were recorded under the groups of the old set, or not at all. So an acquire also checks
 * - the records of every group the host had under the retired sets (`formerGroups`): a lease
 *   granted under the old rule is not overlapped by the new one;
 * - the domain-keys that joined the host's group since (`joinedKeys`): their leases from before
 *   were recorded nowhere, so their pairs' live leases are read directly (not their pacing: the
 *   keys keep their own clocks), until those leases have ended or been renewed, which records
 *   them in the group;
 * - when a key joined whose domain-keys nobody can list (a wildcard pattern without `group`, each
 *   host its own key), nothing can be read: the group's acquires wait until the leases from before
 *   the change can no longer run (`heldSince`: the newest such change).
 */

/** A domain-key that joined an isolation group, and when (epoch ms of the change). */
export interface JoinedKey {
  readonly key: string;
  readonly since: number;
}

/** The isolation of a host under a policy set, as the broker resolves it once per set. */
export interface HostIsolation {
  /** Undefined: neither now nor under a retired set in a group (the common case). */
  readonly params: IsolationParams | undefined;
  /**
   * Domain-keys that joined the host's group since a retired set, each with the epoch ms of the
   * change it joined by. Their live leases from before count only until those leases have ended or
   * been renewed (a renewal records them in the group): the broker puts the ones still due into
   * `params.joinedKeys` per acquire.
   */
  readonly joined: readonly JoinedKey[];
  /**
   * Epoch ms of the newest change that moved into the host's group a key nobody can list; 0 =
   * none. The group's acquires wait until leases from before it can no longer run.
   */
  readonly heldSince: number;
}

const NONE: HostIsolation = Object.freeze({ params: undefined, joined: Object.freeze([]), heldSince: 0 });

/** The isolation group of policy `p` ("" = none). */
export function isolationGroupOf(p: DomainPolicySpec | undefined): string {
  return p?.isolationGroup ?? "";
}

/** The affinity window of `group` under `policies`: the longest any of its policies sets. */
export function affinityOf(policies: readonly DomainPolicySpec[], group: string): number {
  let ms = 0;
  for (const p of policies) if (isolationGroupOf(p) === group && (p.affinityWindowMs ?? 0) > ms) ms = p.affinityWindowMs ?? 0;
  return ms;
}

/** Validate an isolation group name ("" = none); the rules of a policy's `group`. */
export function normalizeIsolationGroup(group: string): string {
  try {
    return normalizeGroup(group);
  } catch {
    throw new InvalidInputError(`isolation group "${group}" must be lowercase letters, digits, ".", "_" or "-" (at most 253)`);
  }
}

/** The isolation fields of a stored policy, present only when set (earlier versions stored none). */
export function storedIsolation(group: unknown, affinityMs: number): Pick<DomainPolicySpec, "isolationGroup" | "affinityWindowMs"> {
  return {
    ...(typeof group === "string" && group !== "" ? { isolationGroup: group } : {}),
    ...(Number.isFinite(affinityMs) && affinityMs > 0 ? { affinityWindowMs: affinityMs } : {}),
  };
}

/** The isolation of `host` (normalised), whose domain-key is `domainKey`, under `set`. */
export function hostIsolation(set: PolicySet, host: string, domainKey: string): HostIsolation {
  const group = isolationGroupOf(findPolicy(set.policies, host));
  const formerGroups: string[] = [];
  for (const retired of set.history) {
    const g = isolationGroupOf(findPolicy(retired.policies, host));
    if (g !== "" && g !== group && !formerGroups.includes(g)) formerGroups.push(g);
  }
  if (group === "" && formerGroups.length === 0) return NONE;
  const params: IsolationParams = { group, affinityMs: group === "" ? 0 : affinityOf(set.policies, group), formerGroups };
  if (group === "" || set.history.length === 0) return { params, joined: [], heldSince: 0 };
  const joined = new Map<string, number>();
  let heldSince = 0;
  for (const retired of set.history) {
    for (const p of set.policies) {
      if (isolationGroupOf(p) !== group || wasInGroup(retired, p, group)) continue;
      const key = formerKey(retired, p);
      if (key === undefined) heldSince = Math.max(heldSince, retired.retiredAt);
      else if (key !== domainKey) joined.set(key, Math.max(joined.get(key) ?? 0, retired.retiredAt));
    }
  }
  return { params, joined: [...joined].map(([key, since]) => ({ key, since })), heldSince };
}

/**
 * The isolation group of domain-key `domainKey` under `policies` ("" = none): that of the policies
 * whose `group` the key is, when there are any (the key is a group name), else that of the policy
 * that applies to the key as a host. Policies sharing a `group` but naming different isolation
 * groups are refused by the broker; should a store hold some, the smallest name wins, so that
 * every reader agrees whatever order it holds the policies in.
 */
export function keyGroup(policies: readonly DomainPolicySpec[], domainKey: string): string {
  let named = false;
  let group = "";
  for (const p of policies) {
    if (p.group !== domainKey) continue;
    named = true;
    const g = isolationGroupOf(p);
    if (g !== "" && (group === "" || g < group)) group = g;
  }
  return named ? group : isolationGroupOf(findPolicy(policies, domainKey));
}

/** The isolation group of domain-key `domainKey` under `policies` and the group's window. */
export function keyIsolation(policies: readonly DomainPolicySpec[], domainKey: string): Pick<IsolationParams, "group" | "affinityMs"> {
  const group = keyGroup(policies, domainKey);
  return { group, affinityMs: group === "" ? 0 : affinityOf(policies, group) };
}

/**
 * The share key of a domain-key (G8 in fallback, docs/spec.md §7): fallback shares are cut per
 * share key rather than per domain-key. It is the key itself, or `#<group>` when the key is in
 * isolation group <group>. Two workers listed with two keys of one group then see each other on
 * one share key — neither claims it alone, and their shares are disjoint — so no proxy is used
 * for two keys of the group at once. The SDK's domain shares and the broker's reservations both
 * map keys with it; the stores read a reservation entry `#<group>` as every key of that group.
 */
export function shareKeyOf(policies: readonly DomainPolicySpec[], domainKey: string): string {
  const group = keyGroup(policies, domainKey);
  return group === "" ? domainKey : `#${group}`;
}

/** Whether the hosts of `p` were in `group` under `retired`, by the same pattern and domain-key. */
function wasInGroup(retired: RetiredPolicySet, p: DomainPolicySpec, group: string): boolean {
  const old = retired.policies.find((q) => q.pattern === p.pattern);
  return old !== undefined && isolationGroupOf(old) === group && old.group === p.group;
}

/**
 * The one domain-key the hosts of `p` had under `retired`, when it can be named: an exact
 * pattern's host under the old policies, or the old `group` of the same wildcard pattern.
 * Undefined: a wildcard whose hosts were each their own key (nobody can list them).
 */
function formerKey(retired: RetiredPolicySet, p: DomainPolicySpec): string | undefined {
  if (!p.pattern.startsWith("*")) {
    const old = findPolicy(retired.policies, p.pattern);
    return old !== undefined && old.group !== "" ? old.group : p.pattern;
  }
  const same = retired.policies.find((q) => q.pattern === p.pattern);
  if (same !== undefined && same.group !== "" && !hasMoreSpecific(retired.policies, p.pattern)) return same.group;
  return undefined;
}

/** Whether `policies` hold a pattern more specific than the wildcard `pattern` inside it. */
function hasMoreSpecific(policies: readonly DomainPolicySpec[], pattern: string): boolean {
  const suffix = pattern === "*" ? "" : pattern.slice(1);
  return policies.some((q) => q.pattern !== pattern && (suffix === "" || q.pattern.endsWith(suffix)));
}
