import { create } from "@bufbuild/protobuf";
import {
  AcquireLeaseResponseSchema,
  DomainPacingSchema,
  GetPoolSnapshotResponseSchema,
  LeavePoolResponseSchema,
  ReleaseLeaseResponseSchema,
  RenewLeaseResponseSchema,
  WorkerInfoSchema,
} from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { MethodsOf, ServiceHandlers } from "@proxybroker/sdk/wire";
import { durationOf, leaseToWire, policyToWire, proxyToWire, timestampOf } from "@proxybroker/sdk/wire";
import type { ProxyView } from "@proxybroker/sdk/model";
import { InvalidInputError } from "@proxybroker/sdk/model";
import { decisionToWire, deniedToError, lostToError } from "./answers.js";
import type { BrokerContext } from "./context.js";
import { leaseStream } from "./lease-stream.js";
import { reportOutcomes } from "./report-outcomes.js";
import { unary } from "./unary.js";
import { callerName } from "../security/auth.js";
import { recordGrant } from "./grant-hub.js";
import { DOMAIN_PACING_LIMIT } from "./domain-pacing.js";
import { checkAcquire, checkPool, checkRelease, checkRenew, checkWorkerId } from "./validate.js";
import type { AcquireSpec } from "./validate.js";
import type { Decision } from "./lease-engine.js";
import { BrokerError } from "./errors.js";

type Methods = MethodsOf<typeof ProxyBroker>;

const SNAPSHOT_PAGE = 1000;

/** The ProxyBroker service: the Lease stream and the unary RPCs with the status codes of SPEC §5. */
export function brokerHandlers(ctx: BrokerContext): ServiceHandlers<Methods> {
  return {
    lease: leaseStream(ctx),

    acquireLease: unary(ctx.isDraining, async (req, signal, call) => {
      const caller = callerName(call);
      let d: Decision;
      let spec: AcquireSpec;
      try {
        spec = checkAcquire(req, ctx.limits, caller);
        // a retry with the same (worker_id, request_id) gets the same lease from the store
        d = await ctx.engine.acquire(spec, signal);
      } catch (err) {
        ctx.metrics.denied(req.pool, BrokerError.from(err).reason);
        throw err;
      }
      ctx.debugLog?.debug(
        { requestId: spec.requestId, worker: spec.workerId, pool: spec.pool, host: spec.host, granted: d.kind === "granted", proxy: d.kind === "granted" ? d.lease.proxy.id : "" },
        "acquire (unary)",
      );
      if (d.kind === "denied") {
        ctx.metrics.denied(spec.pool, "NO_PROXY_AVAILABLE");
        throw deniedToError(d);
      }
      recordGrant(ctx, d.lease, caller, spec.workerId);
      return create(AcquireLeaseResponseSchema, { lease: leaseToWire(d.lease) });
    }),

    renewLease: unary(ctx.isDraining, async (req) => {
      const spec = checkRenew(req, ctx.limits);
      const r = await ctx.engine.renew(spec);
      ctx.debugLog?.debug({ leaseId: spec.leaseId, renewed: r.kind !== "lost", ...(r.kind === "lost" ? { reason: r.reason } : {}) }, "renew (unary)");
      if (r.kind === "lost") throw lostToError(spec.leaseId, r.reason);
      ctx.metrics.renewals.inc();
      return create(RenewLeaseResponseSchema, { leaseId: spec.leaseId, expireTime: timestampOf(r.expireAt) });
    }),

    releaseLease: unary(ctx.isDraining, async (req, signal, call) => {
      const spec = checkRelease(req, ctx.limits, callerName(call));
      const r = await ctx.engine.release(spec, signal);
      ctx.debugLog?.debug({ leaseId: spec.leaseId, outcome: spec.outcome.kind, released: r.kind !== "lost" }, "release (unary)");
      if (r.kind === "lost") {
        // A unary call cannot carry both an error status and the next lease: give the next back.
        if (r.next?.kind === "granted") {
          void ctx.engine
            .release({ leaseId: r.next.lease.leaseId, fencingToken: r.next.lease.fencingToken, outcome: { kind: "ABANDONED", httpStatus: 0, latencyMs: 0, retryAfterMs: 0 } })
            .catch(() => undefined);
        }
        throw lostToError(spec.leaseId, r.reason ?? "NOT_FOUND");
      }
      ctx.metrics.releases.inc({ outcome: spec.outcome.kind });
      ctx.counts.outcomes.add("", spec.outcome.kind, ctx.clock());
      if (r.next?.kind === "denied") ctx.metrics.denied(spec.next?.pool ?? "", "NO_PROXY_AVAILABLE");
      const next = r.next === undefined ? undefined : decisionToWire(spec.next?.requestId ?? "", r.next);
      return create(ReleaseLeaseResponseSchema, { leaseId: spec.leaseId, next: next ?? { case: undefined } });
    }),

    reportOutcomes: unary(ctx.isDraining, (req, _signal, call) => reportOutcomes(ctx, ctx.policyDefaults, req, callerName(call))),

    leavePool: unary(ctx.isDraining, async (req) => {
      const pool = checkPool(req.pool);
      if (req.workerId === "") throw new InvalidInputError("worker_id is required: the worker that leaves");
      const workerId = checkWorkerId(req.workerId);
      // a pool without proxies knows no workers: nothing is written for it
      await ctx.engine.policySet(pool);
      const left = ctx.engine.serves(pool) && (await ctx.store.forgetWorker(pool, workerId));
      ctx.debugLog?.debug({ pool, worker: workerId, left }, "leave");
      return create(LeavePoolResponseSchema, { left });
    }),

    getPoolSnapshot: unary(ctx.isDraining, async (req) => {
      const pool = checkPool(req.pool);
      const now = ctx.clock();
      const workerId = req.workerId === "" ? "" : checkWorkerId(req.workerId);
      // recorded only in a pool that exists (one with proxies): invented pools leave nothing behind
      if (workerId !== "") {
        await ctx.engine.policySet(pool);
        if (ctx.engine.serves(pool)) await ctx.store.touchWorker(pool, workerId);
      }
      const liveWorkers = (await ctx.store.liveWorkers(pool, now - ctx.workerActiveWindowMs)).map((w) =>
        create(WorkerInfoSchema, { workerId: w.workerId, lastSeenTime: timestampOf(w.lastSeenAt), fallbackPool: w.fallbackPoolAt > 0 }),
      );
      const longestTtl = durationOf(ctx.engine.longestTtl);
      const fallbackWindow = durationOf(ctx.fallbackWindowMs);
      const pacing = (await ctx.store.domainPacing(pool, [], DOMAIN_PACING_LIMIT)).map((d) =>
        create(DomainPacingSchema, {
          domain: d.domainKey,
          effectiveInterval: durationOf(d.adaptiveMs),
          learnedLimit: durationOf(d.learnedMs),
          learnedTime: timestampOf(d.learnedAt),
        }),
      );
      // workers only: what a fallback share and its pacing need, without the proxies and policies
      if (req.workersOnly) return create(GetPoolSnapshotResponseSchema, { pool, liveWorkers, snapshotTime: timestampOf(now), longestTtl, fallbackWindow, pacing });
      const proxies: ProxyView[] = [];
      for (let after = ""; ; ) {
        const page = await ctx.store.listProxies(pool, { size: SNAPSHOT_PAGE, after });
        proxies.push(...page.proxies);
        if (page.next === "") break;
        after = page.next;
      }
      const set = await ctx.store.listPolicies(pool);
      return create(GetPoolSnapshotResponseSchema, {
        pool,
        proxies: proxies.map(proxyToWire),
        liveWorkers,
        policies: set.policies.map(policyToWire),
        snapshotTime: timestampOf(now),
        longestTtl,
        fallbackWindow,
        pacing,
      });
    }),
  };
}
