import { create } from "@bufbuild/protobuf";
import { InvalidInputError, normalizeHost } from "@proxybroker/sdk/model";
import type { OutcomeKindName, OutcomeReport } from "@proxybroker/sdk/model";
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
 * ReportOutcomes: outcomes an SDK saw in its fallback pool (or of a broker lease whose release
 * the broker will not hear), applied like releases' outcomes — scores, bans with the domain's
 * ban_ttl, cool-downs — but only on pairs the reporting worker held (docs/spec.md §8): a lease of
 * the pair granted to or renewed by it lately (the store records it), or the pair named by its
 * acknowledged fallback claim (report-claims.ts). The others are counted as `not_held`. A report
 * never takes a score below the floor, and the store cuts its cool-down and ban to the reports'
 * caps (REPORT_MAX_COOL_DOWN_MS, REPORT_MAX_BAN_MS); at most REPORT_OUTCOMES_PER_MINUTE per
 * caller; what the calls did goes to the audit trail (report-audit.ts).
 */
export async function reportOutcomes(
  ctx: BrokerContext,
  defaults: PolicyDefaults,
  req: ReportOutcomesRequest,
  caller: string,
): Promise<ReportOutcomesResponse> {
  const pool = checkPool(req.pool);
  if (req.outcomes.length > MAX_OUTCOMES) throw new InvalidInputError(`at most ${MAX_OUTCOMES} outcomes per call`);
  const workerId = req.workerId === "" ? "" : checkWorkerId(req.workerId);
  // bounded per caller: the token's name, else the worker id it gives
  const who = caller !== "" ? `token:${caller}` : `worker:${workerId === "" ? "anonymous" : workerId}`;
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
  const asked = req.outcomes.map((o, i) => {
    if (o.proxyId === "" || o.proxyId.length > 300) throw new InvalidInputError(`outcomes[${i}].proxy_id is empty or too long`);
    const domainKey = GROUP.test(o.domain) ? o.domain : normalizeHost(o.domain, `outcomes[${i}].domain`);
    const byGroup = policies.find((p) => p.group === domainKey && p.banTtlMs > 0);
    const banTtlMs = byGroup?.banTtlMs ?? effectivePolicy(policies, domainKey, defaults).banTtlMs;
    return { proxyId: o.proxyId, domainKey, outcome: checkOutcome(o.outcome, ctx.limits), banTtlMs };
  });
  if (asked.length === 0) return create(ReportOutcomesResponseSchema, { applied: 0, notHeld: 0 });
  const claimed = await ctx.reportClaims.claimed(pool, workerId, asked);
  const reports: OutcomeReport[] = asked.map((r, i) => (claimed[i] === true ? { ...r, claimed: true } : r));
  const done = await ctx.store.reportOutcomes(pool, reports, workerId);
  const kinds: Partial<Record<OutcomeKindName, number>> = {};
  let claimedApplied = 0;
  reports.forEach((r, i) => {
    if (done.fates[i] !== "applied") return;
    kinds[r.outcome.kind] = (kinds[r.outcome.kind] ?? 0) + 1;
    if (r.claimed === true) claimedApplied += 1;
    ctx.metrics.reported.inc({ kind: r.outcome.kind });
    // a slow-down or a ban seen elsewhere: kept leases of the key go on paced (spec §5)
    if (r.outcome.kind === "RATE_LIMITED" || r.outcome.kind === "BLOCKED") ctx.held.wantBack(pool, r.domainKey);
  });
  if (done.notHeld > 0) ctx.metrics.reportsNotHeld.inc(done.notHeld);
  ctx.reportAudit.note(caller, pool, { workerId, applied: done.applied, claimed: claimedApplied, notHeld: done.notHeld, kinds });
  return create(ReportOutcomesResponseSchema, { applied: done.applied, notHeld: done.notHeld });
}
