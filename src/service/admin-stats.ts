/**
 * ProxyAdmin.GetDomainStats: per domain-key, the leases this broker granted in the last minute
 * (counted here), the pairs banned in the last hour (from the pool's event stream) and the
 * interval the domain-key runs under now.
 */
import { create } from "@bufbuild/protobuf";
import { durationOf } from "@proxybroker/sdk/wire";
import { DomainStatsSchema, GetDomainStatsResponseSchema } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { GetDomainStatsRequest, GetDomainStatsResponse } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { BrokerContext } from "./context.js";
import { describeDomainPacing } from "./domain-pacing.js";
import { checkPool } from "./validate.js";

const HOUR_MS = 3_600_000;
/** Domain-keys listed at most (the busiest). */
const MAX_DOMAINS = 200;

export async function domainStats(ctx: BrokerContext, req: GetDomainStatsRequest): Promise<GetDomainStatsResponse> {
  const pool = checkPool(req.pool);
  const now = ctx.clock();
  const grants = ctx.grantCounts.perDomain(pool, now);
  const bans = new Map<string, number>();
  // the event stream keeps about the last 10,000 events: read them all, count the last hour's bans
  for (let cursor = "", i = 0; i < 100; i++) {
    const r = await ctx.store.readEvents(pool, cursor, { count: 1_000, blockMs: 0 });
    for (const e of r.events) if ((e.kind === "BAN" || (e.kind === "ADMIN" && e.detail.startsWith("ban on "))) && e.at > now - HOUR_MS) bans.set(e.domainKey, (bans.get(e.domainKey) ?? 0) + 1);
    if (r.events.length < 1_000) break;
    cursor = r.cursor;
  }
  const keys = [...new Set([...grants.keys(), ...bans.keys()])]
    .sort((a, b) => (grants.get(b) ?? 0) - (grants.get(a) ?? 0) || (bans.get(b) ?? 0) - (bans.get(a) ?? 0) || a.localeCompare(b))
    .slice(0, MAX_DOMAINS);
  const set = await ctx.store.listPolicies(pool);
  const pacing = new Map((await describeDomainPacing({ store: ctx.store, pool, set, defaults: ctx.policyDefaults, domains: keys })).map((v) => [v.domainKey, v.effectiveMs]));
  return create(GetDomainStatsResponseSchema, {
    domains: keys.map((dk) =>
      create(DomainStatsSchema, {
        domain: dk,
        grantsLastMinute: grants.get(dk) ?? 0,
        bansLastHour: bans.get(dk) ?? 0,
        effectiveInterval: durationOf(pacing.get(dk) ?? 0),
      }),
    ),
  });
}
