/**
 * The isolation group's checks (CHAOS_ISOLATION), pure: from the sites' own request log, one
 * client IP (one proxy) inside two sites of the group at the same time (crossSiteOverlaps of
 * crawl/isolation-check.ts: requests that only touch do not count, nor two at one site — that is
 * the per-site overlap check); and from ListDomainPolicies at the end, every site's policy still
 * naming the group. Every site of the run is in the group. Without a group the cross-site count
 * is worked out the same way, for information (nothing then keeps a proxy on one site), and
 * fails nothing.
 */
import { crossSiteOverlaps } from "../crawl/isolation-check.js";
import type { CrossSiteOverlap } from "../crawl/isolation-check.js";
import type { SiteRequest } from "./records.js";

export type { CrossSiteOverlap } from "../crawl/isolation-check.js";

/** A domain policy as ListDomainPolicies lists it (the fields the check reads). */
export interface ListedPolicy {
  readonly pattern: string;
  /** "" = none. */
  readonly isolationGroup: string;
}

export interface IsolationInput {
  /** CHAOS_ISOLATION; undefined: no group (the cross-site count is for information only). */
  readonly group: string | undefined;
  /** The group's sites as they log themselves (`127.0.1.x:port`): every site of the run. */
  readonly sites: readonly string[];
  /** Their domain-keys (hosts): each has an exact policy naming the group. */
  readonly domains: readonly string[];
  /** ListDomainPolicies at the end (empty without a group). */
  readonly policiesAtEnd: readonly ListedPolicy[];
}

/** A site whose policy at the end does not put it in the group. */
export interface PolicyMissing {
  readonly domain: string;
  readonly why: string;
}

export interface IsolationResult {
  readonly group: string | undefined;
  readonly sites: readonly string[];
  /** In order of the second request's start. */
  readonly crossSiteOverlaps: readonly CrossSiteOverlap[];
  /** Empty without a group. */
  readonly policiesMissing: readonly PolicyMissing[];
}

/** No group and no sites: what a check without an isolation input reports. */
export const NO_ISOLATION: IsolationResult = { group: undefined, sites: [], crossSiteOverlaps: [], policiesMissing: [] };

/** The sites whose policy at the end is absent or names another isolation group. */
export function policiesMissing(domains: readonly string[], group: string, listed: readonly ListedPolicy[]): PolicyMissing[] {
  const byPattern = new Map(listed.map((p) => [p.pattern, p]));
  const out: PolicyMissing[] = [];
  for (const domain of domains) {
    const p = byPattern.get(domain);
    if (p === undefined) out.push({ domain, why: "no policy" });
    else if (p.isolationGroup !== group)
      out.push({ domain, why: p.isolationGroup === "" ? "no isolation group" : `isolation group ${p.isolationGroup}` });
  }
  return out;
}

export function checkIsolationGroup(requests: readonly SiteRequest[], input: IsolationInput): IsolationResult {
  const overlaps = crossSiteOverlaps(requests, new Set(input.sites)).sort(
    (x, y) => x.second.start - y.second.start || x.first.start - y.first.start,
  );
  return {
    group: input.group,
    sites: input.sites,
    crossSiteOverlaps: overlaps,
    policiesMissing: input.group === undefined ? [] : policiesMissing(input.domains, input.group, input.policiesAtEnd),
  };
}

/** Why the group's checks fail the run (empty: they pass, or there is no group). */
export function isolationFailures(r: IsolationResult): string[] {
  if (r.group === undefined) return [];
  const out: string[] = [];
  if (r.crossSiteOverlaps.length > 0) out.push(`${r.crossSiteOverlaps.length} cross-site overlaps in isolation group ${r.group}`);
  if (r.policiesMissing.length > 0)
    out.push(`${r.policiesMissing.length} sites whose policy does not name isolation group ${r.group} at the end`);
  return out;
}
