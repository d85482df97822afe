import { create } from "@bufbuild/protobuf";
import {
  AcquireLeaseResponseSchema,
  DomainPacingSchema,
  DomainUseSchema,
  GetPoolSnapshotResponseSchema,
  LeavePoolResponseSchema,
  ReleaseLeaseResponseSchema,
  RenewLeaseResponseSchema,
  WorkerInfoSchema,
} from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { DomainUse as DomainUseMessage, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { MethodsOf, ServiceHandlers } from "@proxybroker/sdk/wire";
import { durationOf, epochMsOf, leaseToWire, policyToWire, proxyToWire, timestampOf } from "@proxybroker/sdk/wire";
import type { DomainUse, PolicySet, ProxyView } from "@proxybroker/sdk/model";
import { InvalidInputError } from "@proxybroker/sdk/model";
import { deniedToError, lostToError, nextToWire } from "./answers.js";
import { LeaseCalls } from "./lease-calls.js";
import type { BrokerContext } from "./context.js";
import { leaseStream } from "./lease-stream.js";
import { reportOutcomes } from "./report-outcomes.js";
import { unary, unaryCall } from "./unary.js";
import { callerName } from "../security/auth.js";
import { DOMAIN_PACING_LIMIT } from "../observe/domain-pacing.js";
import { checkPool, checkWorkerId } from "./validate.js";
import { PolicyVersions } from "../lease/policy-versions.js";
import { ownListingsHeld } from "../lease/own-listings.js";

type Methods = MethodsOf<typeof ProxyBroker>;

const SNAPSHOT_PAGE = 1000;
/** Domain-keys listed per worker at most (its most recent): a worker uses only those in fallback. */
const MAX_DOMAINS_LISTED = 64;

/**
 * Each worker's domain-key uses as a snapshot lists them: the most recent `MAX_DOMAINS_LISTED`,
 * with how long each has been listed and how long it will still be without a new lease.
 */
function domainListings(
  uses: readonly DomainUse[],
  at: { readonly now: number; readonly windowMs: number },
): Map<string, DomainUseMessage[]> {
  const byWorker = new Map<string, DomainUse[]>();
  for (const u of uses) {
    const list = byWorker.get(u.workerId) ?? [];
    list.push(u);
    byWorker.set(u.workerId, list);
  }
  const out = new Map<string, DomainUseMessage[]>();
  for (const [worker, list] of byWorker) {
    const recent = list.sort((x, y) => y.lastUsedAt - x.lastUsedAt).slice(0, MAX_DOMAINS_LISTED);
    out.set(
      worker,
      recent.map((u) =>
        create(DomainUseSchema, {
          domain: u.domainKey,
          listedFor: durationOf(Math.max(0, at.now - u.firstUsedAt)),
          expiresIn: durationOf(Math.max(0, u.lastUsedAt + at.windowMs - at.now)),
        }),
      ),
    );
  }
  return out;
}

/** The ProxyBroker service: the Lease stream and the unary RPCs with the status codes of SPEC §5. */
export function brokerHandlers(ctx: BrokerContext): ServiceHandlers<Methods> {
  const policyVersions = new PolicyVersions(ctx.store, ctx.clock);
  const calls = new LeaseCalls(ctx);
  return {
    lease: leaseStream(ctx, calls),

    acquireLease: unaryCall(async (req, signal, call) => {
      const d = await calls.acquire(req, { surface: "unary", caller: callerName(call), signal });
      if (d.kind === "denied") throw deniedToError(d);
      return create(AcquireLeaseResponseSchema, { lease: leaseToWire(d.lease) });
    }),

    renewLease: unaryCall(async (req) => {
      const r = await calls.renew(req, { surface: "unary", caller: "" });
      if (r.kind === "lost") throw lostToError(req.leaseId, r.reason);
      return create(RenewLeaseResponseSchema, { leaseId: req.leaseId, expireTime: timestampOf(r.expireAt), ttl: durationOf(r.ttlMs) });
    }),

    releaseLease: unaryCall(async (req, signal, call) => {
      // a lease granted on a stream may be released here: its holder is asked nothing more
      ctx.held.unask(req.leaseId);
      const r = await calls.release(req, { surface: "unary", caller: callerName(call), signal });
      ctx.held.drop(req.leaseId);
      if (r.kind === "lost") {
        // A unary call cannot carry both an error status and the next lease: give the next back.
        if (r.next?.kind === "granted") calls.giveBack(r.next.lease);
        throw lostToError(req.leaseId, r.reason ?? "NOT_FOUND");
      }
      const next = r.next === undefined ? undefined : nextToWire(r.nextRequestId, r.next);
      return create(ReleaseLeaseResponseSchema, { leaseId: req.leaseId, next: next ?? { case: undefined } });
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
      let policies: PolicySet | undefined;
      if (workerId !== "") {
        // recorded only in a pool that exists (one with proxies): invented pools leave nothing behind
        const cached = await ctx.engine.policySet(pool);
        // the list it holds; a time from the future is none it could hold: ignored
        const listsAt = epochMsOf(req.listsTime);
        if (ctx.engine.serves(pool)) await ctx.store.touchWorker(pool, workerId, listsAt <= now ? { listsAt } : {});
        // the store's (this replica's copy misses a change made through another until its next acquire)
        policies = cached.version === (await policyVersions.of(pool)) ? cached : await ctx.store.listPolicies(pool);
      }
      const at = { now, windowMs: ctx.domainUses.windowMs };
      const uses = await ctx.domainUses.of(pool);
      const listings = domainListings(uses, at);
      // the workers that may be in fallback; the live ones among them are listed
      const seen = await ctx.store.liveWorkers(pool, now - Math.max(ctx.workerActiveWindowMs, ctx.fallbackWindowMs));
      // its own listings only once every other worker on their share keys surely saw them (own-listings.ts)
      const held = policies === undefined ? new Set<string>() : ownListingsHeld(workerId, uses, seen, policies, at);
      const liveWorkers = seen
        .filter((w) => w.lastSeenAt >= now - ctx.workerActiveWindowMs)
        .map((w) =>
          create(WorkerInfoSchema, {
            workerId: w.workerId,
            lastSeenTime: timestampOf(w.lastSeenAt),
            fallbackPool: w.fallbackPoolAt > 0,
            yieldsLeases: (w.yieldsLeasesAt ?? 0) > 0,
            domains: (listings.get(w.workerId) ?? []).filter((d) => w.workerId !== workerId || !held.has(d.domain)),
          }),
        );
      const longestTtl = durationOf(ctx.engine.longestTtlOf(pool));
      const fallbackWindow = durationOf(ctx.fallbackWindowMs);
      const pacing = (await ctx.store.domainPacing(pool, [], DOMAIN_PACING_LIMIT)).map((d) =>
        create(DomainPacingSchema, {
          domain: d.domainKey,
          effectiveInterval: durationOf(d.adaptiveMs),
          learnedLimit: durationOf(d.learnedMs),
          learnedTime: timestampOf(d.learnedAt),
        }),
      );
      const common = {
        pool,
        liveWorkers,
        snapshotTime: timestampOf(now),
        longestTtl,
        fallbackWindow,
        pacing,
        domainsListed: true,
        workerAbsentAfter: durationOf(ctx.workerAbsentAfterMs),
        reserveInterval: durationOf(ctx.reserveIntervalMs),
      };
      // workers only: what a fallback share and its pacing need, without the proxies and policies,
      // but with the store's policy version (a set through any replica counts; read once a second)
      if (req.workersOnly) return create(GetPoolSnapshotResponseSchema, { ...common, policyVersion: await policyVersions.of(pool) });
      const proxies: ProxyView[] = [];
      for (let after = ""; ; ) {
        const page = await ctx.store.listProxies(pool, { size: SNAPSHOT_PAGE, after });
        proxies.push(...page.proxies);
        if (page.next === "") break;
        after = page.next;
      }
      const set = await ctx.store.listPolicies(pool);
      return create(GetPoolSnapshotResponseSchema, {
        ...common,
        proxies: proxies.map(proxyToWire),
        policies: set.policies.map(policyToWire),
        policyVersion: set.version,
      });
    }),
  };
}
