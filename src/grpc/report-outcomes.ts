import { create } from "@bufbuild/protobuf";
import { InvalidInputError, normalizeHost } from "@proxybroker/sdk/model";
import type { OutcomeReport } from "@proxybroker/sdk/model";
import { effectivePolicy } from "@proxybroker/sdk/model";
import type { PolicyDefaults } from "@proxybroker/sdk/model";
import { ReportOutcomesResponseSchema } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { ReportOutcomesRequest, ReportOutcomesResponse } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { BrokerContext } from "./context.js";
import { checkOutcome, checkPool, checkWorkerId } from "./validate.js";
import { BrokerError } from "./errors.js";
import { status } from "@grpc/grpc-js";

const MAX_OUTCOMES = 10_000;
const GROUP = /^[a-z0-9][a-z0-9._-]{0,252}$/;

/**
 * ReportOutcomes: outcomes an SDK saw in its fallback pool, applied like releases' outcomes
 * (scores, bans with the domain's ban_ttl, cool-downs) but never below the score floor, so that
 * reports alone quarantine nothing; at most REPORT_OUTCOMES_PER_MINUTE per caller.
 */
export async function reportOutcomes(
  ctx: BrokerContext,
  defaults: PolicyDefaults,
  req: ReportOutcomesRequest,
  caller: string,
): Promise<ReportOutcomesResponse> {
  const pool = checkPool(req.pool);
  if (req.outcomes.length > MAX_OUTCOMES) throw new InvalidInputError(`at most ${MAX_OUTCOMES} outcomes per call`);
  // bounded per caller: the token's name, else the worker id it gives
  const who = caller !== "" ? `token:${caller}` : `worker:${req.workerId === "" ? "anonymous" : checkWorkerId(req.workerId)}`;
  const waitMs = ctx.reportBudget.take(who, req.outcomes.length);
  if (waitMs > 0) {
    throw new BrokerError(
      status.RESOURCE_EXHAUSTED,
      `more than ${ctx.reportBudget.perMinute} reported outcomes per minute from this caller (REPORT_OUTCOMES_PER_MINUTE): none applied; retry after ${waitMs} ms`,
      { "retry-after-ms": String(waitMs) },
      { reason: "TOO_MANY_REPORTS" },
    );
  }
  const { policies } = await ctx.store.listPolicies(pool);
  const reports: OutcomeReport[] = req.outcomes.map((o, i) => {
    if (o.proxyId === "" || o.proxyId.length > 300) throw new InvalidInputError(`outcomes[${i}].proxy_id is empty or too long`);
    const domainKey = GROUP.test(o.domain) ? o.domain : normalizeHost(o.domain, `outcomes[${i}].domain`);
    const byGroup = policies.find((p) => p.group === domainKey && p.banTtlMs > 0);
    const banTtlMs = byGroup?.banTtlMs ?? effectivePolicy(policies, domainKey, defaults).banTtlMs;
    return { proxyId: o.proxyId, domainKey, outcome: checkOutcome(o.outcome, ctx.limits), banTtlMs };
  });
  const applied = reports.length > 0 ? await ctx.store.reportOutcomes(pool, reports) : 0;
  for (const r of reports) {
    ctx.metrics.reported.inc({ kind: r.outcome.kind });
    // a slow-down or a ban seen elsewhere: kept leases of the key go on paced (spec §5)
    if (r.outcome.kind === "RATE_LIMITED" || r.outcome.kind === "BLOCKED") ctx.held.wantBack(pool, r.domainKey);
  }
  return create(ReportOutcomesResponseSchema, { applied });
}
