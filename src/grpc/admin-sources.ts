/**
 * ProxyAdmin's sources (docs/spec.md §11): AddSource, ListSources, RemoveSource. A source's URL is
 * shown without userinfo, fragment or query values, its path's token-like segments as `***`
 * (redactSourceUrl); its headers file by path only (the file is read here once, to refuse one
 * that cannot be read, and its contents go nowhere).
 */
import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { InvalidInputError } from "@proxybroker/sdk/model";
import type { SourceView } from "@proxybroker/sdk/model";
import { NO_SOURCE_STATUS } from "@proxybroker/sdk/model";
import {
  AddSourceResponseSchema,
  ListSourcesResponseSchema,
  RefreshSourceResponseSchema,
  RemoveSourceResponseSchema,
  SourceSchema,
} from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { ProxyAdmin, Source } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { durationOf, timestampOf } from "@proxybroker/sdk/wire";
import type { MethodsOf, ServiceHandlers } from "@proxybroker/sdk/wire";
import { SourceFetchError } from "../health/sources/errors.js";
import { headersReader } from "../health/sources/headers.js";
import { sourceIdOf } from "../health/sources/source-id.js";
import { callerName } from "../security/auth.js";
import { redactSourceKey, redactSourceUrl } from "../security/redact.js";
import { audit } from "./audit.js";
import type { BrokerContext } from "./context.js";
import { BrokerError } from "./errors.js";
import { unary } from "./unary.js";
import { checkPool } from "./validate.js";
import { checkSource } from "./validate-source.js";

type Methods = Pick<MethodsOf<typeof ProxyAdmin>, "addSource" | "listSources" | "removeSource" | "refreshSource">;

/** Most sources one pool may have. */
export const MAX_SOURCES_PER_POOL = 100;

export function sourceHandlers(ctx: BrokerContext): ServiceHandlers<Methods> {
  return {
    addSource: unary(ctx.isDraining, async (req, _signal, call) => {
      const pool = checkPool(req.pool);
      const checked = checkSource(req);
      if (ctx.healthPass === undefined) throw noChecker();
      const readHeaders = ctx.readSourceHeaders ?? headersReader("");
      await readHeaders(checked.headersFile).catch((err: unknown) => {
        throw err instanceof SourceFetchError ? new InvalidInputError(`headers_file: ${err.message}`) : err;
      });
      const id = sourceIdOf(pool, checked.url);
      const current = await ctx.store.listSources(pool);
      const old = current.find((s) => s.id === id);
      if (old === undefined && current.length >= MAX_SOURCES_PER_POOL) {
        throw new InvalidInputError(`pool ${pool} has ${MAX_SOURCES_PER_POOL} sources already`);
      }
      const spec = { ...checked, id, pool, createdAt: old?.createdAt ?? ctx.clock() };
      await ctx.store.putSource(spec);
      await audit(ctx, {
        actor: callerName(call),
        method: "AddSource",
        pool,
        detail: `${old === undefined ? "added" : "replaced"} source ${id} (${spec.format}, every ${spec.intervalMs / 1000} s)`,
      });
      const source = sourceToWire({ ...spec, status: old?.status ?? NO_SOURCE_STATUS }, await ownedOf(ctx, pool, id));
      return create(AddSourceResponseSchema, { source, created: old === undefined });
    }),

    listSources: unary(ctx.isDraining, async (req) => {
      const pool = checkPool(req.pool);
      const listed = await ctx.store.listSources(pool);
      const owned = await Promise.all(listed.map((s) => ownedOf(ctx, pool, s.id)));
      const sources: Source[] = listed.map((s, i) => sourceToWire(s, owned[i] ?? 0));
      return create(ListSourcesResponseSchema, { sources });
    }),

    removeSource: unary(ctx.isDraining, async (req, _signal, call) => {
      const pool = checkPool(req.pool);
      const found = await findSource(ctx, pool, req.source);
      const removed = found !== undefined && (await ctx.store.removeSource(pool, found.id));
      if (removed) await audit(ctx, { actor: callerName(call), method: "RemoveSource", pool, detail: `removed source ${found.id}` });
      return create(RemoveSourceResponseSchema, { removed });
    }),

    refreshSource: unary(ctx.isDraining, async (req, _signal, call) => {
      const pool = checkPool(req.pool);
      const refresh = ctx.refreshSource;
      if (refresh === undefined) throw noChecker();
      const found = await findSource(ctx, pool, req.source);
      if (found === undefined) throw new BrokerError(status.NOT_FOUND, `pool ${pool} has no source ${redactSourceKey(req.source)}`);
      const o = await refresh(found);
      await audit(ctx, { actor: callerName(call), method: "RefreshSource", pool, detail: `refreshed source ${found.id}: ${o.result}` });
      const after = (await ctx.store.listSources(pool)).find((s) => s.id === found.id) ?? found;
      return create(RefreshSourceResponseSchema, { source: sourceToWire(after, await ownedOf(ctx, pool, found.id)) });
    }),
  };
}

/** The source `key` names (its id or URL), if any. */
async function findSource(ctx: BrokerContext, pool: string, key: string): Promise<SourceView | undefined> {
  const k = key.trim();
  if (k === "" || k.length > 2000) throw new InvalidInputError("source must be a source's id or URL");
  return (await ctx.store.listSources(pool)).find((s) => s.id === k || s.url === k || s.url === urlOrEmpty(k));
}

function noChecker(): BrokerError {
  return new BrokerError(
    status.FAILED_PRECONDITION,
    "this broker has no health checker, whose leader refreshes sources: set HEALTH_CHECK_URL (or HEALTH_CHECK_URLS)",
    {},
    { reason: "NO_HEALTH_CHECKER" },
  );
}

async function ownedOf(ctx: BrokerContext, pool: string, id: string): Promise<number> {
  return ctx.store.sourceMemberCount(pool, id);
}

/** A URL as AddSource stores it ("" when it is none). */
function urlOrEmpty(text: string): string {
  try {
    return new URL(text).toString();
  } catch {
    return "";
  }
}

export function sourceToWire(s: SourceView, owned: number): Source {
  const st = s.status;
  return create(SourceSchema, {
    id: s.id,
    pool: s.pool,
    url: redactSourceUrl(s.url),
    format: s.format,
    jsonPath: s.jsonPath,
    headersFile: s.headersFile,
    interval: durationOf(s.intervalMs),
    tier: s.tier,
    labels: { ...s.labels },
    ...(s.createdAt > 0 ? { createTime: timestampOf(s.createdAt) } : {}),
    ...(st.lastRefreshAt > 0 ? { lastRefreshTime: timestampOf(st.lastRefreshAt) } : {}),
    ...(st.lastSuccessAt > 0 ? { lastSuccessTime: timestampOf(st.lastSuccessAt) } : {}),
    lastResult: st.result,
    lastError: st.error,
    listed: st.listed,
    added: st.added,
    removed: st.removed,
    owned,
  });
}
