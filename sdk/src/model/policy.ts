import { InvalidInputError, normalizeHost } from "./domain-key.js";
import type { DomainPolicySpec } from "./model.js";

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
}

/** What a host resolves to: its domain-key and the effective numbers. */
export interface EffectivePolicy {
  readonly domainKey: string;
  readonly maxConcurrency: number;
  readonly minIntervalMs: number;
  readonly defaultTtlMs: number;
  readonly banTtlMs: number;
}

/** Resolve `host` against the policies with the broker defaults. */
export function effectivePolicy(
  policies: readonly DomainPolicySpec[],
  host: string,
  defaults: PolicyDefaults,
): EffectivePolicy {
  const p = findPolicy(policies, host);
  return {
    domainKey: p && p.group !== "" ? p.group : host,
    maxConcurrency: p && p.maxConcurrency > 0 ? p.maxConcurrency : defaults.maxConcurrency,
    minIntervalMs: p && p.minIntervalMs > 0 ? p.minIntervalMs : defaults.minIntervalMs,
    defaultTtlMs: p && p.defaultTtlMs > 0 ? p.defaultTtlMs : defaults.defaultTtlMs,
    banTtlMs: p && p.banTtlMs > 0 ? p.banTtlMs : defaults.banTtlMs,
  };
}
