/**
 * ProxyAdmin's actions on proxies — ban, unban, disable, enable — and the audit trail.
 */
import { create } from "@bufbuild/protobuf";
import type { ServerUnaryCall } from "@grpc/grpc-js";
import { InvalidInputError, effectivePolicy, normalizeHost } from "@proxybroker/sdk/model";
import type { ProxyAction, ProxyActionResult } from "@proxybroker/sdk/model";
import { msOf, timestampOf } from "@proxybroker/sdk/wire";
import {
  AuditEntrySchema,
  BanProxiesResponseSchema,
  DisableProxiesResponseSchema,
  EnableProxiesResponseSchema,
  ListAuditResponseSchema,
  ProxyActionResultSchema,
  UnbanProxiesResponseSchema,
} from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { MethodsOf, ServiceHandlers } from "@proxybroker/sdk/wire";
import { callerName } from "../security/auth.js";
import { audit } from "./audit.js";
import type { BrokerContext } from "./context.js";
import { unary } from "./unary.js";
import { checkPool } from "./validate.js";

type Methods = MethodsOf<typeof ProxyAdmin>;
type ActionMethods = Pick<Methods, "banProxies" | "unbanProxies" | "disableProxies" | "enableProxies" | "listAudit">;

/** Longest ban an admin may set: 30 days. */
const MAX_BAN_MS = 30 * 86_400_000;
const MAX_IDS = 10_000;
const GROUP = /^[a-z0-9][a-z0-9._-]{0,252}$/;

export function adminActionHandlers(ctx: BrokerContext): ServiceHandlers<ActionMethods> {
  const act = async (
    call: ServerUnaryCall<unknown, unknown>,
    method: string,
    req: { pool: string; ids: readonly string[]; domain?: string },
    action: (domainKey: string) => ProxyAction,
    describe: (domainKey: string) => string,
  ) => {
    const pool = checkPool(req.pool);
    const ids = checkIds(req.ids);
    const domainKey = req.domain === undefined || req.domain === "" ? "" : await domainKeyOf(ctx, pool, req.domain);
    const r = await ctx.store.proxyAction(pool, ids, action(domainKey));
    const what = describe(domainKey);
    await audit(
      ctx,
      {
        actor: callerName(call),
        method,
        pool,
        detail: `${what}: ${r.changed.length} changed, ${r.unchanged.length} unchanged, ${r.notFound.length} not found`,
      },
      r.changed.map((id) => ({ kind: "ADMIN", proxyId: id, domainKey, detail: what })),
    );
    return wire(r);
  };
  return {
    banProxies: unary(ctx.isDraining, async (req, _signal, call) => {
      const ttlMs = msOf(req.ttl);
      if (!(ttlMs > 0) || ttlMs > MAX_BAN_MS) throw new InvalidInputError(`ttl must be between 1 ms and 30 days, got ${ttlMs} ms`);
      const result = await act(
        call,
        "BanProxies",
        req,
        (domainKey) => ({ kind: "ban", domainKey, ttlMs }),
        (dk) => `ban${dk === "" ? "" : ` on ${dk}`} for ${Math.round(ttlMs / 1000)} s`,
      );
      return create(BanProxiesResponseSchema, { result });
    }),
    unbanProxies: unary(ctx.isDraining, async (req, _signal, call) => {
      const result = await act(
        call,
        "UnbanProxies",
        req,
        (domainKey) => ({ kind: "unban", domainKey }),
        (dk) => `unban${dk === "" ? "" : ` on ${dk}`}`,
      );
      return create(UnbanProxiesResponseSchema, { result });
    }),
    disableProxies: unary(ctx.isDraining, async (req, _signal, call) => {
      const result = await act(
        call,
        "DisableProxies",
        req,
        () => ({ kind: "disable" }),
        () => "disable",
      );
      return create(DisableProxiesResponseSchema, { result });
    }),
    enableProxies: unary(ctx.isDraining, async (req, _signal, call) => {
      const result = await act(
        call,
        "EnableProxies",
        req,
        () => ({ kind: "enable" }),
        () => "enable",
      );
      return create(EnableProxiesResponseSchema, { result });
    }),
    listAudit: unary(ctx.isDraining, async (req) => {
      const limit = req.limit === 0 ? 50 : Math.min(req.limit, 1_000);
      const entries = await ctx.store.listAudit(limit);
      return create(ListAuditResponseSchema, {
        entries: entries.map((e) =>
          create(AuditEntrySchema, { time: timestampOf(e.at), actor: e.actor, method: e.method, pool: e.pool, detail: e.detail }),
        ),
      });
    }),
  };
}

/** A host → its domain-key under the pool's policies; a policy's group as it is. */
export async function domainKeyOf(ctx: BrokerContext, pool: string, domain: string): Promise<string> {
  const set = await ctx.store.listPolicies(pool);
  if (GROUP.test(domain) && set.policies.some((p) => p.group === domain)) return domain;
  return effectivePolicy(set.policies, normalizeHost(domain, "domain"), ctx.policyDefaults).domainKey;
}

function checkIds(ids: readonly string[]): readonly string[] {
  if (ids.length === 0) throw new InvalidInputError("ids is empty");
  if (ids.length > MAX_IDS) throw new InvalidInputError(`at most ${MAX_IDS} ids per call`);
  ids.forEach((id, i) => {
    if (id === "" || id.length > 300) throw new InvalidInputError(`ids[${i}] is empty or longer than 300 characters`);
  });
  return ids;
}

function wire(r: ProxyActionResult) {
  return create(ProxyActionResultSchema, { changed: r.changed, unchanged: r.unchanged, notFound: r.notFound });
}
