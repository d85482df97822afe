import { create } from "@bufbuild/protobuf";
import { InvalidInputError } from "@proxybroker/sdk/model";
import type { DomainPolicySpec, ProxySpecInput } from "@proxybroker/sdk/model";
import { normalizeGroup, normalizePattern } from "@proxybroker/sdk/model";
import { parseProxySpec } from "@proxybroker/sdk/model";
import { msOf, policyToWire, proxyToWire } from "@proxybroker/sdk/wire";
import {
  AddProxiesResponseSchema,
  DeleteDomainPolicyResponseSchema,
  GetPoolStatsResponseSchema,
  ListDomainPoliciesResponseSchema,
  ListProxiesResponseSchema,
  RejectedProxySchema,
  RemoveProxiesResponseSchema,
  RestoreProxiesResponseSchema,
  SetDomainPolicyResponseSchema,
} from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { ProxyAdmin, RejectedProxy } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { DomainPolicy } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { MethodsOf, ServiceHandlers } from "@proxybroker/sdk/wire";
import type { BrokerContext } from "./context.js";
import { unary } from "./unary.js";
import { checkPool } from "./validate.js";

type Methods = MethodsOf<typeof ProxyAdmin>;

const MAX_PAGE = 1000;
const MAX_BATCH = 10_000;

/** The ProxyAdmin service: proxies and domain policies of a pool. */
export function adminHandlers(ctx: BrokerContext): ServiceHandlers<Methods> {
  return {
    addProxies: unary(ctx.isDraining, async (req) => {
      const pool = checkPool(req.pool);
      if (req.proxies.length > MAX_BATCH) throw new InvalidInputError(`at most ${MAX_BATCH} proxies per call`);
      const valid: ProxySpecInput[] = [];
      const rejected: RejectedProxy[] = [];
      const seen = new Set<string>();
      for (const spec of req.proxies) {
        try {
          const p = parseProxySpec(spec);
          if (seen.has(p.id)) throw new InvalidInputError(`proxy ${p.id} appears twice in this request`);
          seen.add(p.id);
          valid.push(p);
        } catch (err) {
          const reason = err instanceof InvalidInputError ? err.message : String(err);
          rejected.push(create(RejectedProxySchema, { url: spec.url, reason }));
        }
      }
      const r = valid.length > 0 ? await ctx.store.addProxies(pool, valid) : { added: [], updated: [] };
      return create(AddProxiesResponseSchema, { added: r.added, updated: r.updated, rejected });
    }),

    removeProxies: unary(ctx.isDraining, async (req) => {
      const r = await ctx.store.removeProxies(checkPool(req.pool), req.ids);
      return create(RemoveProxiesResponseSchema, { removed: r.removed, notFound: r.notFound });
    }),

    restoreProxies: unary(ctx.isDraining, async (req) => {
      const r = await ctx.store.restoreProxies(checkPool(req.pool), req.ids);
      return create(RestoreProxiesResponseSchema, { restored: r.restored, notFound: r.notFound });
    }),

    listProxies: unary(ctx.isDraining, async (req) => {
      if (req.pageSize < 0) throw new InvalidInputError("page_size must not be negative");
      const size = req.pageSize === 0 ? 100 : Math.min(req.pageSize, MAX_PAGE);
      const page = await ctx.store.listProxies(checkPool(req.pool), { size, after: req.pageToken });
      return create(ListProxiesResponseSchema, { proxies: page.proxies.map(proxyToWire), nextPageToken: page.next });
    }),

    getPoolStats: unary(ctx.isDraining, async (req) => {
      const pool = checkPool(req.pool);
      const s = await ctx.store.poolStats(pool, ctx.clock() - ctx.workerActiveWindowMs);
      return create(GetPoolStatsResponseSchema, { pool, ...s });
    }),

    setDomainPolicy: unary(ctx.isDraining, async (req) => {
      if (req.policy === undefined) throw new InvalidInputError("policy is required");
      const policy = checkPolicy(req.policy, ctx);
      await ctx.store.setPolicy(checkPool(req.pool), policy);
      return create(SetDomainPolicyResponseSchema, { policy: policyToWire(policy) });
    }),

    listDomainPolicies: unary(ctx.isDraining, async (req) => {
      const set = await ctx.store.listPolicies(checkPool(req.pool));
      return create(ListDomainPoliciesResponseSchema, { policies: set.policies.map(policyToWire) });
    }),

    deleteDomainPolicy: unary(ctx.isDraining, async (req) => {
      const deleted = await ctx.store.deletePolicy(checkPool(req.pool), normalizePattern(req.pattern));
      return create(DeleteDomainPolicyResponseSchema, { deleted });
    }),
  };
}

function checkPolicy(p: DomainPolicy, ctx: BrokerContext): DomainPolicySpec {
  const minIntervalMs = msOf(p.minInterval);
  const defaultTtlMs = msOf(p.defaultTtl);
  const banTtlMs = msOf(p.banTtl);
  if (minIntervalMs < 0 || banTtlMs < 0) throw new InvalidInputError("policy durations must not be negative");
  if (p.maxConcurrency > 1000) throw new InvalidInputError(`max_concurrency ${p.maxConcurrency} is above 1000`);
  if (defaultTtlMs !== 0 && (defaultTtlMs < ctx.limits.ttlMinMs || defaultTtlMs > ctx.limits.ttlMaxMs)) {
    throw new InvalidInputError(`default_ttl ${defaultTtlMs} ms is outside [${ctx.limits.ttlMinMs}, ${ctx.limits.ttlMaxMs}] ms`);
  }
  return {
    pattern: normalizePattern(p.pattern),
    group: normalizeGroup(p.group),
    maxConcurrency: p.maxConcurrency,
    minIntervalMs,
    defaultTtlMs,
    banTtlMs,
  };
}
