/**
 * The pacing a domain-key runs under now: its policy's interval and the adaptive one (§2), for
 * the GetDomainPacing RPC and the `proxybroker_domain_pacing_interval_seconds` gauge.
 */
import { applyPolicy, baseInterval, effectivePolicy, findPolicy, normalizeHost } from "@proxybroker/sdk/model";
import type { DomainPacing, DomainPolicySpec, EffectivePolicy, PolicyDefaults, PolicySet } from "@proxybroker/sdk/model";
import type { StorePolicies } from "@proxybroker/sdk/engine";
import type { LeaseEngine } from "../lease/lease-engine.js";
import type { PacingSample } from "./metrics.js";

/** The pacing of one domain-key as an operator reads it. */
export interface DomainPacingView {
  readonly domainKey: string;
  /** The pattern of the policy that applies ("" = none). */
  readonly policyPattern: string;
  readonly minIntervalMs: number;
  /** The interval before jitter: max(policy, adaptive) unless the policy fixes it. */
  readonly effectiveMs: number;
  readonly learnedMs: number;
  readonly learnedAt: number;
}

/** Most domain-keys one call or one scrape reports. */
export const DOMAIN_PACING_LIMIT = 100;
/** Most pools the gauge reports, and domain-keys per pool. */
const GAUGE_POOLS = 16;
const GAUGE_DOMAINS = 50;

/** The policy of a domain-key: the one whose group it is, else the one that matches it as a host. */
function policyOf(
  policies: readonly DomainPolicySpec[],
  domainKey: string,
  defaults: PolicyDefaults,
): { pattern: string; eff: EffectivePolicy } {
  const policy = policies.find((p) => p.group === domainKey) ?? findPolicy(policies, domainKey);
  return { pattern: policy?.pattern ?? "", eff: applyPolicy(policy, domainKey, defaults) };
}

/**
 * The pacing of `domains` (hosts or domain-keys, resolved through the policies); when empty, of
 * every policy group and every adapted domain-key, at most DOMAIN_PACING_LIMIT.
 */
export async function describeDomainPacing(opts: {
  readonly store: StorePolicies;
  readonly pool: string;
  readonly set: PolicySet;
  readonly defaults: PolicyDefaults;
  readonly domains: readonly string[];
}): Promise<DomainPacingView[]> {
  const { set, defaults } = opts;
  let keys: string[];
  let states: DomainPacing[];
  if (opts.domains.length > 0) {
    keys = [...new Set(opts.domains.slice(0, DOMAIN_PACING_LIMIT).map((d) => keyOf(set, d, defaults)))];
    states = await opts.store.domainPacing(opts.pool, keys, DOMAIN_PACING_LIMIT);
  } else {
    states = await opts.store.domainPacing(opts.pool, [], DOMAIN_PACING_LIMIT);
    const groups = set.policies.map((p) => p.group).filter((g) => g !== "");
    keys = [...new Set([...states.map((s) => s.domainKey), ...groups])].slice(0, DOMAIN_PACING_LIMIT);
    const known = new Set(states.map((s) => s.domainKey));
    const missing = keys.filter((k) => !known.has(k));
    if (missing.length > 0) states = [...states, ...(await opts.store.domainPacing(opts.pool, missing, DOMAIN_PACING_LIMIT))];
  }
  const byKey = new Map(states.map((s) => [s.domainKey, s]));
  return keys.map((domainKey) => {
    const state = byKey.get(domainKey);
    const { pattern, eff } = policyOf(set.policies, domainKey, defaults);
    return {
      domainKey,
      policyPattern: pattern,
      minIntervalMs: eff.minIntervalMs,
      effectiveMs: baseInterval(eff.minIntervalMs, state?.adaptiveMs ?? 0, eff.adaptive),
      learnedMs: state?.learnedMs ?? 0,
      learnedAt: state?.learnedAt ?? 0,
    };
  });
}

/** The domain-key of a host or domain-key given by an operator. */
function keyOf(set: PolicySet, domain: string, defaults: PolicyDefaults): string {
  const d = domain.trim().toLowerCase();
  if (set.policies.some((p) => p.group === d)) return d;
  return effectivePolicy(set.policies, normalizeHost(d), defaults).domainKey;
}

/** Samples of the gauge: the pools this broker served, bounded. */
export async function domainPacingGauge(opts: {
  readonly store: StorePolicies;
  readonly engine: LeaseEngine;
  readonly defaults: PolicyDefaults;
}): Promise<PacingSample[]> {
  const out: PacingSample[] = [];
  for (const pool of opts.engine.pools().slice(0, GAUGE_POOLS)) {
    const set = await opts.engine.policySet(pool);
    const views = await describeDomainPacing({ store: opts.store, pool, set, defaults: opts.defaults, domains: [] });
    for (const v of views.slice(0, GAUGE_DOMAINS)) out.push({ pool, domain: v.domainKey, seconds: v.effectiveMs / 1000 });
  }
  return out;
}
