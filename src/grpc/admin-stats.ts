/** ProxyAdmin.GetDomainStats: the per domain-key figures of a pool (src/observe/domain-figures.ts). */
import { create } from "@bufbuild/protobuf";
import { durationOf } from "@proxybroker/sdk/wire";
import { DomainStatsSchema, GetDomainStatsResponseSchema } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { GetDomainStatsRequest, GetDomainStatsResponse } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { domainFigures } from "../observe/domain-figures.js";
import type { BrokerContext } from "./context.js";
import { checkPool } from "./validate.js";

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
