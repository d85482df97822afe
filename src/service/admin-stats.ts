/**
 * Per domain-key figures of a pool: the leases this broker granted in the last minute (counted
 * here), the pairs banned and cooled down in the last hour (from the pool's event stream) and the
 * interval the domain-key runs under now. ProxyAdmin.GetDomainStats and the status page show them.
 */
import { create } from "@bufbuild/protobuf";
import { durationOf } from "@proxybroker/sdk/wire";
import { DomainStatsSchema, GetDomainStatsResponseSchema } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { GetDomainStatsRequest, GetDomainStatsResponse } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import type { PolicyDefaults } from "@proxybroker/sdk/model";
import type { BrokerContext } from "./context.js";
import { describeDomainPacing } from "./domain-pacing.js";
import type { MinuteCounts } from "./minute-counts.js";
import { checkPool } from "./validate.js";

const HOUR_MS = 3_600_000;
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
  deps: { readonly store: LeaseStore; readonly policyDefaults: PolicyDefaults; readonly counts: { readonly grantsByDomain: MinuteCounts } },
  pool: string,
  now: number,
): Promise<DomainFigures[]> {
  const grants = deps.counts.grantsByDomain.of(pool, now);
  const bans = new Map<string, number>();
  const cools = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  // the event stream keeps about the last 10,000 events: read them all, count the last hour's
  for (let cursor = "", i = 0; i < 20; i++) {
    const r = await deps.store.readEvents(pool, cursor, { count: 1_000, blockMs: 0 });
    for (const e of r.events) {
      if (e.at <= now - HOUR_MS) continue;
      if (e.kind === "BAN" || (e.kind === "ADMIN" && e.detail.startsWith("ban on "))) bump(bans, e.domainKey);
      else if (e.kind === "COOL_DOWN") bump(cools, e.domainKey);
    }
    if (r.events.length < 1_000) break;
    cursor = r.cursor;
  }
  const score = (k: string) => (grants.get(k) ?? 0) * 1e6 + (bans.get(k) ?? 0) * 1e3 + (cools.get(k) ?? 0);
  const keys = [...new Set([...grants.keys(), ...bans.keys(), ...cools.keys()])].sort((a, b) => score(b) - score(a) || a.localeCompare(b)).slice(0, MAX_DOMAINS);
  if (keys.length === 0) return [];
  const set = await deps.store.listPolicies(pool);
  const pacing = new Map((await describeDomainPacing({ store: deps.store, pool, set, defaults: deps.policyDefaults, domains: keys })).map((v) => [v.domainKey, v.effectiveMs]));
  return keys.map((domain) => ({
    domain,
    grantsLastMinute: grants.get(domain) ?? 0,
    bansLastHour: bans.get(domain) ?? 0,
    coolDownsLastHour: cools.get(domain) ?? 0,
    effectiveMs: pacing.get(domain) ?? 0,
  }));
}

export async function domainStats(ctx: BrokerContext, req: GetDomainStatsRequest): Promise<GetDomainStatsResponse> {
  const figures = await domainFigures(ctx, checkPool(req.pool), ctx.clock());
  return create(GetDomainStatsResponseSchema, {
    domains: figures.map((f) =>
      create(DomainStatsSchema, {
        domain: f.domain,
        grantsLastMinute: f.grantsLastMinute,
        bansLastHour: f.bansLastHour,
        coolDownsLastHour: f.coolDownsLastHour,
        effectiveInterval: durationOf(f.effectiveMs),
      }),
    ),
  });
}
