/**
 * Per domain-key figures of a pool: the leases this broker granted in the last minute (counted
 * here), the pairs banned and cooled down in the last hour (from the pool's event stream, read
 * incrementally: recent-restrictions.ts) and the
 * interval the domain-key runs under now. ProxyAdmin.GetDomainStats and the status page show them.
 */
import type { StoreEvents, StorePolicies } from "@proxybroker/sdk/engine";
import type { PolicyDefaults } from "@proxybroker/sdk/model";
import { describeDomainPacing } from "./domain-pacing.js";
import type { MinuteCounts } from "./minute-counts.js";
import type { RecentRestrictions } from "./recent-restrictions.js";

/** Domain-keys listed at most (the busiest). */
const MAX_DOMAINS = 200;

export interface DomainFigures {
  readonly domain: string;
  readonly grantsLastMinute: number;
  readonly bansLastHour: number;
  readonly coolDownsLastHour: number;
  readonly effectiveMs: number;
}

export async function domainFigures(
  deps: {
    readonly store: StorePolicies & StoreEvents;
    readonly policyDefaults: PolicyDefaults;
    readonly counts: { readonly grantsByDomain: MinuteCounts; readonly restrictions: RecentRestrictions };
  },
  pool: string,
  now: number,
): Promise<DomainFigures[]> {
  const grants = deps.counts.grantsByDomain.of(pool, now);
  const { bans, coolDowns: cools } = await deps.counts.restrictions.of(deps.store, pool, now);
  const score = (k: string) => (grants.get(k) ?? 0) * 1e6 + (bans.get(k) ?? 0) * 1e3 + (cools.get(k) ?? 0);
  const keys = [...new Set([...grants.keys(), ...bans.keys(), ...cools.keys()])]
    .sort((a, b) => score(b) - score(a) || a.localeCompare(b))
    .slice(0, MAX_DOMAINS);
  if (keys.length === 0) return [];
  const set = await deps.store.listPolicies(pool);
  const pacing = new Map(
    (await describeDomainPacing({ store: deps.store, pool, set, defaults: deps.policyDefaults, domains: keys })).map((v) => [
      v.domainKey,
      v.effectiveMs,
    ]),
  );
  return keys.map((domain) => ({
    domain,
    grantsLastMinute: grants.get(domain) ?? 0,
    bansLastHour: bans.get(domain) ?? 0,
    coolDownsLastHour: cools.get(domain) ?? 0,
    effectiveMs: pacing.get(domain) ?? 0,
  }));
}
