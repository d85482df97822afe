import { InvalidInputError, normalizeHost } from "./domain-key.js";
import type { AcquireParams, DomainPolicySpec, PacingAnchor, PolicySet } from "./model.js";

/**
 * Domain policies: which policy applies to a host, and the domain-key it maps to. The most
 * specific pattern wins: the exact host, then the longest `*.suffix`, then `*`.
 */

const GROUP = /^[a-z0-9][a-z0-9._-]{0,252}$/;

/** Validate and normalise a policy pattern (`shop.example.com`, `*.example.com` or `*`). */
export function normalizePattern(pattern: string): string {
  const p = pattern.trim().toLowerCase();
  if (p === "*") return p;
  if (p.startsWith("*.")) return `*.${normalizeHost(p.slice(2), "policy pattern")}`;
  if (p.includes("*")) throw new InvalidInputError(`policy pattern "${pattern}" may only start with "*." or be "*"`);
  return normalizeHost(p, "policy pattern");
}

/** Validate a policy group name ("" = none). */
export function normalizeGroup(group: string): string {
  const g = group.trim().toLowerCase();
  if (g === "" || GROUP.test(g)) return g;
  throw new InvalidInputError(`policy group "${group}" must match ${GROUP.source}`);
}

/** Does `pattern` (normalised) match `host` (normalised)? `*.x` matches subdomains of x only. */
export function patternMatches(pattern: string, host: string): boolean {
  if (pattern === "*") return true;
  if (pattern.startsWith("*.")) return host.endsWith(pattern.slice(1));
  return pattern === host;
}

function specificity(pattern: string): number {
  if (pattern === "*") return 0;
  if (pattern.startsWith("*.")) return 1 + pattern.length;
  return Number.MAX_SAFE_INTEGER;
}

/** The policy that applies to `host`, if any. */
export function findPolicy(policies: readonly DomainPolicySpec[], host: string): DomainPolicySpec | undefined {
  let best: DomainPolicySpec | undefined;
  for (const p of policies) {
    if (!patternMatches(p.pattern, host)) continue;
    if (best === undefined || specificity(p.pattern) > specificity(best.pattern)) best = p;
  }
  return best;
}

/** Broker defaults that a policy's unset (0) fields fall back to. */
export interface PolicyDefaults {
  readonly maxConcurrency: number;
  readonly minIntervalMs: number;
  readonly defaultTtlMs: number;
  readonly banTtlMs: number;
  /** Cap of the adaptive interval. */
  readonly maxIntervalMs: number;
}

/** What a host resolves to: its domain-key and the effective numbers. */
export interface EffectivePolicy {
  readonly domainKey: string;
  readonly maxConcurrency: number;
  readonly minIntervalMs: number;
  readonly defaultTtlMs: number;
  readonly banTtlMs: number;
  readonly pacing: PacingAnchor;
  readonly jitterMs: number;
  readonly adaptive: boolean;
  readonly maxIntervalMs: number;
}

/** Resolve `host` against the policies with the broker defaults. */
export function effectivePolicy(policies: readonly DomainPolicySpec[], host: string, defaults: PolicyDefaults): EffectivePolicy {
  return applyPolicy(findPolicy(policies, host), host, defaults);
}

/** The numbers of policy `p` (undefined: none applies) for `host`, with the broker defaults. */
export function applyPolicy(p: DomainPolicySpec | undefined, host: string, defaults: PolicyDefaults): EffectivePolicy {
  return {
    domainKey: p && p.group !== "" ? p.group : host,
    maxConcurrency: p && p.maxConcurrency > 0 ? p.maxConcurrency : defaults.maxConcurrency,
    minIntervalMs: p && p.minIntervalMs > 0 ? p.minIntervalMs : defaults.minIntervalMs,
    defaultTtlMs: p && p.defaultTtlMs > 0 ? p.defaultTtlMs : defaults.defaultTtlMs,
    banTtlMs: p && p.banTtlMs > 0 ? p.banTtlMs : defaults.banTtlMs,
    pacing: p?.pacing ?? "release",
    jitterMs: p?.jitterMs ?? 0,
    adaptive: p === undefined || !p.fixedInterval,
    maxIntervalMs: p && p.maxIntervalMs > 0 ? p.maxIntervalMs : defaults.maxIntervalMs,
  };
}

/**
 * The domain-keys `host` had under the retired policy sets of `set` other than `current`, in
 * order of appearance: while a lease under an old key may still run, a proxy busy there is not
 * granted under the new one (see `AcquireParams.shadowKeys`).
 */
export function shadowKeys(set: PolicySet, host: string, current: string): string[] {
  const keys: string[] = [];
  for (const retired of set.history) {
    const p = findPolicy(retired.policies, host);
    const key = p !== undefined && p.group !== "" ? p.group : host;
    if (key !== current && !keys.includes(key)) keys.push(key);
  }
  return keys;
}

/** A policy with every optional field at its default (pacing from release, no jitter, adaptive). */
export function policySpec(p: Pick<DomainPolicySpec, "pattern"> & Partial<DomainPolicySpec>): DomainPolicySpec {
  return {
    group: "",
    maxConcurrency: 0,
    minIntervalMs: 0,
    defaultTtlMs: 0,
    banTtlMs: 0,
    pacing: "release",
    jitterMs: 0,
    maxIntervalMs: 0,
    fixedInterval: false,
    ...p,
  };
}

/** The parts of an acquire's parameters that come from its effective policy. */
export type PolicyParams = Pick<
  AcquireParams,
  "domainKey" | "maxConcurrency" | "minIntervalMs" | "pacing" | "jitterMs" | "adaptive" | "maxIntervalMs" | "banTtlMs"
>;

/** The acquire parameters an effective policy sets. */
export function policyParams(eff: EffectivePolicy): PolicyParams {
  return {
    domainKey: eff.domainKey,
    maxConcurrency: eff.maxConcurrency,
    minIntervalMs: eff.minIntervalMs,
    pacing: eff.pacing,
    jitterMs: eff.jitterMs,
    adaptive: eff.adaptive,
    maxIntervalMs: eff.maxIntervalMs,
    banTtlMs: eff.banTtlMs,
  };
}
