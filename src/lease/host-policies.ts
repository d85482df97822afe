/**
 * What a host resolves to under a pool's policy set (its effective policy and the domain-keys it
 * had under retired sets), remembered per set: a policy set is immutable and replaced whole on a
 * reload, so its entries never go stale, and the acquire path does not match every pattern of the
 * set against the host on every call.
 */
import { applyPolicy, findPolicy, hostIsolation, policyParams, shadowKeys } from "@proxybroker/sdk/model";
import type { EffectivePolicy, IsolationParams, JoinedKey, PolicyDefaults, PolicyParams, PolicySet } from "@proxybroker/sdk/model";

/** A host under one policy set. */
export interface HostPolicy {
  readonly eff: EffectivePolicy;
  /**
   * A policy of the set applies to the host: its pacing is what the operator said, not only what
   * adaptive pacing learned so far (a host nobody configured starts unpaced until its first 429s).
   */
  readonly configured: boolean;
  /** The acquire parameters `eff` sets. */
  readonly params: PolicyParams;
  readonly shadowKeys: readonly string[];
  /** G8: what its acquires check and write (undefined: no isolation group now or lately). */
  readonly isolation: IsolationParams | undefined;
  /** Keys that joined its isolation group lately, and when (see hostIsolation). */
  readonly joined: readonly JoinedKey[];
  /** Epoch ms of a change that moved keys nobody can list into its group (0 = none; see hostIsolation). */
  readonly isolationHeldSince: number;
}

/** Hosts remembered per policy set; beyond this many, the set's memory starts over. */
export const MAX_HOSTS_PER_SET = 10_000;

const NO_SHADOWS: readonly string[] = Object.freeze([]);

export class HostPolicies {
  private readonly bySet = new WeakMap<PolicySet, Map<string, HostPolicy>>();

  constructor(private readonly defaults: PolicyDefaults) {}

  /** `host` (normalised) under `set`. */
  of(set: PolicySet, host: string): HostPolicy {
    let hosts = this.bySet.get(set);
    if (hosts === undefined) {
      hosts = new Map();
      this.bySet.set(set, hosts);
    }
    const known = hosts.get(host);
    if (known !== undefined) return known;
    const policy = findPolicy(set.policies, host);
    const eff = applyPolicy(policy, host, this.defaults);
    const isolation = hostIsolation(set, host, eff.domainKey);
    const resolved: HostPolicy = {
      eff,
      configured: policy !== undefined,
      params: policyParams(eff),
      shadowKeys: set.history.length === 0 ? NO_SHADOWS : Object.freeze(shadowKeys(set, host, eff.domainKey)),
      isolation: isolation.params,
      joined: isolation.joined,
      isolationHeldSince: isolation.heldSince,
    };
    if (hosts.size >= MAX_HOSTS_PER_SET) hosts.clear();
    hosts.set(host, resolved);
    return resolved;
  }
}
