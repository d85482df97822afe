import { create } from "@bufbuild/protobuf";
import { InvalidInputError } from "@proxybroker/sdk/model";
import type { DomainPolicySpec } from "@proxybroker/sdk/model";
import { normalizeGroup, normalizeIsolationGroup, normalizePattern, storedIsolation } from "@proxybroker/sdk/model";
import { redactProxyUrl } from "../security/redact.js";
import { durationOf, policyFromWire, policyToWire, proxyToWire, timestampOf } from "@proxybroker/sdk/wire";
import {
  DeleteDomainPolicyResponseSchema,
  GetDomainPacingResponseSchema,
  GetPoolStatsResponseSchema,
  ListDomainPoliciesResponseSchema,
  ListProxiesResponseSchema,
  RemoveProxiesResponseSchema,
  RestoreProxiesResponseSchema,
  SetDomainPolicyResponseSchema,
} from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { DomainPacingSchema, PacingMode } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { DomainPolicy } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { MethodsOf, ServiceHandlers } from "@proxybroker/sdk/wire";
import type { BrokerContext } from "./context.js";
import { describeDomainPacing, DOMAIN_PACING_LIMIT } from "../observe/domain-pacing.js";
import { unary } from "./unary.js";
import { checkPool } from "./validate.js";
import { checkPolicyExpectations } from "./validate-expectations.js";
import { callerName } from "../security/auth.js";
import { audit } from "./audit.js";
import { adminActionHandlers } from "./admin-actions.js";
import { watchEvents } from "./admin-events.js";
import { checkProxies } from "./admin-check.js";
import { domainStats } from "./admin-stats.js";
import { addProxies } from "./admin-add.js";
import { sourceHandlers } from "./admin-sources.js";

/** A policy in a few words, for the audit trail and the events. */
function describePolicy(p: DomainPolicySpec): string {
  const parts = [`max_concurrency ${p.maxConcurrency === 0 ? 1 : p.maxConcurrency}`, `min_interval ${p.minIntervalMs} ms`];
  if (p.group !== "") parts.push(`group ${p.group}`);
  if (p.jitterMs > 0) parts.push(`jitter ${p.jitterMs} ms`);
  if ((p.isolationGroup ?? "") !== "") parts.push(`isolation group ${p.isolationGroup}, affinity ${p.affinityWindowMs ?? 0} ms`);
  return parts.join(", ");
}

type Methods = MethodsOf<typeof ProxyAdmin>;

const MAX_PAGE = 1000;
const MAX_BATCH = 10_000;

/** The ProxyAdmin service: proxies and domain policies of a pool. */
export function adminHandlers(ctx: BrokerContext): ServiceHandlers<Methods> {
  return {
    ...adminActionHandlers(ctx),
    ...sourceHandlers(ctx),
    watchEvents: watchEvents(ctx),
    checkProxies: checkProxies(ctx),
    getDomainStats: unary(ctx.isDraining, (req) => domainStats(ctx, req)),

    addProxies: unary(ctx.isDraining, (req, _signal, call) => addProxies(ctx, req, call)),

    removeProxies: unary(ctx.isDraining, async (req, _signal, call) => {
      const pool = checkPool(req.pool);
      const r = await ctx.store.removeProxies(pool, checkIds(req.ids));
      await audit(
        ctx,
        { actor: callerName(call), method: "RemoveProxies", pool, detail: `${r.removed.length} removed, ${r.notFound.length} not found` },
        r.removed.map((id) => ({ kind: "ADMIN", proxyId: id, domainKey: "", detail: "remove" })),
      );
      return create(RemoveProxiesResponseSchema, { removed: r.removed, notFound: r.notFound });
    }),

    restoreProxies: unary(ctx.isDraining, async (req, _signal, call) => {
      const pool = checkPool(req.pool);
      const r = await ctx.store.restoreProxies(pool, checkIds(req.ids));
      await audit(
        ctx,
        {
          actor: callerName(call),
          method: "RestoreProxies",
          pool,
          detail: `${r.restored.length} restored, ${r.notFound.length} not found`,
        },
        r.restored.map((id) => ({ kind: "ADMIN", proxyId: id, domainKey: "", detail: "restore" })),
      );
      return create(RestoreProxiesResponseSchema, { restored: r.restored, notFound: r.notFound });
    }),

    listProxies: unary(ctx.isDraining, async (req) => {
      if (req.pageSize < 0) throw new InvalidInputError("page_size must not be negative");
      const size = req.pageSize === 0 ? 100 : Math.min(req.pageSize, MAX_PAGE);
      const page = await ctx.store.listProxies(checkPool(req.pool), { size, after: req.pageToken });
      // the full URL reaches workers only in their leases and in the snapshot (§8)
      const proxies = page.proxies.map((p) => ({ ...proxyToWire(p), url: redactProxyUrl(p.url) }));
      return create(ListProxiesResponseSchema, { proxies, nextPageToken: page.next });
    }),

    getPoolStats: unary(ctx.isDraining, async (req) => {
      const pool = checkPool(req.pool);
      const s = await ctx.store.poolStats(pool, ctx.clock() - ctx.workerActiveWindowMs);
      const hold = await ctx.store.holdState(pool);
      return create(GetPoolStatsResponseSchema, {
        pool,
        ...s,
        ...(hold.heldUntil > 0 ? { grantsHeldUntil: timestampOf(hold.heldUntil) } : {}),
        longestTtl: durationOf(Math.max(hold.longestTtlMs, ctx.engine.longestTtlOf(pool))),
      });
    }),

    setDomainPolicy: unary(ctx.isDraining, async (req, _signal, call) => {
      if (req.policy === undefined) throw new InvalidInputError("policy is required");
      const policy = checkPolicy(req.policy, ctx);
      const pool = checkPool(req.pool);
      checkOneIsolationPerGroup(policy, (await ctx.store.listPolicies(pool)).policies);
      await ctx.store.setPolicy(pool, policy);
      // kept leases were granted unpaced under the old policies: asked back (other replicas: refreshHolds)
      ctx.held.wantBack(pool);
      const what = `set ${policy.pattern}: ${describePolicy(policy)}`;
      await audit(ctx, { actor: callerName(call), method: "SetDomainPolicy", pool, detail: what }, [
        { kind: "POLICY", proxyId: "", domainKey: policy.group !== "" ? policy.group : policy.pattern, detail: what },
      ]);
      return create(SetDomainPolicyResponseSchema, { policy: policyToWire(policy) });
    }),

    listDomainPolicies: unary(ctx.isDraining, async (req) => {
      const set = await ctx.store.listPolicies(checkPool(req.pool));
      return create(ListDomainPoliciesResponseSchema, { policies: set.policies.map(policyToWire) });
    }),

    deleteDomainPolicy: unary(ctx.isDraining, async (req, _signal, call) => {
      const pool = checkPool(req.pool);
      const pattern = normalizePattern(req.pattern);
      const deleted = await ctx.store.deletePolicy(pool, pattern);
      if (deleted) {
        ctx.held.wantBack(pool);
        const what = `delete ${pattern}`;
        await audit(ctx, { actor: callerName(call), method: "DeleteDomainPolicy", pool, detail: what }, [
          { kind: "POLICY", proxyId: "", domainKey: pattern, detail: what },
        ]);
      }
      return create(DeleteDomainPolicyResponseSchema, { deleted });
    }),

    getDomainPacing: unary(ctx.isDraining, async (req) => {
      const pool = checkPool(req.pool);
      if (req.domains.length > DOMAIN_PACING_LIMIT) throw new InvalidInputError(`at most ${DOMAIN_PACING_LIMIT} domains per call`);
      const set = await ctx.store.listPolicies(pool);
      const views = await describeDomainPacing({ store: ctx.store, pool, set, defaults: ctx.policyDefaults, domains: req.domains });
      return create(GetDomainPacingResponseSchema, {
        domains: views.map((v) =>
          create(DomainPacingSchema, {
            domain: v.domainKey,
            policyPattern: v.policyPattern,
            minInterval: durationOf(v.minIntervalMs),
            effectiveInterval: durationOf(v.effectiveMs),
            learnedLimit: durationOf(v.learnedMs),
            learnedTime: timestampOf(v.learnedAt),
          }),
        ),
      });
    }),
  };
}

/** Longest policy duration (interval, jitter, cap): a day. */
const MAX_POLICY_MS = 86_400_000;

function checkPolicy(p: DomainPolicy, ctx: BrokerContext): DomainPolicySpec {
  const { isolationGroup = "", affinityWindowMs = 0, ...spec } = policyFromWire(p);
  const durations = {
    min_interval: spec.minIntervalMs,
    ban_ttl: spec.banTtlMs,
    jitter: spec.jitterMs,
    max_interval: spec.maxIntervalMs,
    affinity_window: affinityWindowMs,
  };
  for (const [name, ms] of Object.entries(durations)) {
    if (!(ms >= 0)) throw new InvalidInputError(`policy ${name} must not be negative`);
    if (name !== "ban_ttl" && ms > MAX_POLICY_MS) throw new InvalidInputError(`policy ${name} ${ms} ms is above a day`);
  }
  if (p.maxConcurrency > 1000) throw new InvalidInputError(`max_concurrency ${p.maxConcurrency} is above 1000`);
  const { defaultTtlMs } = spec;
  if (defaultTtlMs !== 0 && (defaultTtlMs < ctx.limits.ttlMinMs || defaultTtlMs > ctx.limits.ttlMaxMs)) {
    throw new InvalidInputError(`default_ttl ${defaultTtlMs} ms is outside [${ctx.limits.ttlMinMs}, ${ctx.limits.ttlMaxMs}] ms`);
  }
  if (spec.maxIntervalMs > 0 && spec.maxIntervalMs < spec.minIntervalMs) {
    throw new InvalidInputError(`max_interval ${spec.maxIntervalMs} ms is below min_interval ${spec.minIntervalMs} ms`);
  }
  if (p.pacing !== PacingMode.UNSPECIFIED && p.pacing !== PacingMode.AFTER_RELEASE && p.pacing !== PacingMode.AFTER_GRANT) {
    throw new InvalidInputError(`pacing ${p.pacing} is not a PacingMode`);
  }
  if (spec.expectations !== undefined) checkPolicyExpectations(spec.expectations);
  const isolation = checkIsolationGroup(isolationGroup);
  if (affinityWindowMs > 0 && isolation === "") throw new InvalidInputError("affinity_window needs an isolation_group");
  return { ...spec, pattern: normalizePattern(p.pattern), group: normalizeGroup(p.group), ...storedIsolation(isolation, affinityWindowMs) };
}

/**
 * The policies of one domain-key `group` share one isolation group: the key is one lock, and it
 * can be on one platform's side of a group only.
 */
function checkOneIsolationPerGroup(policy: DomainPolicySpec, current: readonly DomainPolicySpec[]): void {
  if (policy.group === "") return;
  const mine = policy.isolationGroup ?? "";
  for (const other of current) {
    if (other.pattern === policy.pattern || other.group !== policy.group || (other.isolationGroup ?? "") === mine) continue;
    const theirs = other.isolationGroup ?? "";
    throw new InvalidInputError(
      `isolation_group: policy ${other.pattern} of group "${policy.group}" has isolation group "${theirs}", not "${mine}"; the policies of one group name one isolation group`,
    );
  }
}

/** A policy's isolation group, normalised ("" = none); the error names the field. */
function checkIsolationGroup(name: string): string {
  try {
    return normalizeIsolationGroup(name);
  } catch (err) {
    if (err instanceof InvalidInputError) throw new InvalidInputError(`isolation_group: ${err.message}`);
    throw err;
  }
}

/** A batch of proxy ids: at most MAX_BATCH, each a host:port of sane length. */
function checkIds(ids: readonly string[]): readonly string[] {
  if (ids.length > MAX_BATCH) throw new InvalidInputError(`at most ${MAX_BATCH} ids per call`);
  ids.forEach((id, i) => {
    if (id === "" || id.length > 300) throw new InvalidInputError(`ids[${i}] is empty or longer than 300 characters`);
  });
  return ids;
}
