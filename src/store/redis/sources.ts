/**
 * Internal to the Redis store: a pool's sources (`P src`, id → spec JSON), their last refresh
 * (`P srcs`, id → status JSON) and the proxies each one added (`P srcm:<id>`, a set). A spec
 * holds the path of its headers file, never a header's value.
 */
import type { SourceSpec, SourceStatus, SourceView } from "@proxybroker/sdk/model";
import { NO_SOURCE_STATUS } from "@proxybroker/sdk/model";
import type { StoreEnv } from "./store-env.js";

/** Members written per SADD. */
const CHUNK = 1000;

export async function putSource(env: StoreEnv, source: SourceSpec): Promise<void> {
  const keys = env.keys.pool(source.pool);
  await env.runner.call((c) => c.hset(keys.sources, source.id, JSON.stringify(source)));
}

export async function listSources(env: StoreEnv, pool: string): Promise<SourceView[]> {
  const keys = env.keys.pool(pool);
  const [specs, statuses] = await env.runner.call((c) => Promise.all([c.hgetall(keys.sources), c.hgetall(keys.sourceStatus)] as const));
  const out: SourceView[] = [];
  for (const [id, raw] of Object.entries(specs)) {
    const spec = decodeSpec(raw);
    if (spec === undefined || spec.id !== id) continue;
    out.push({ ...spec, status: decodeStatus(statuses[id]) });
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export async function removeSource(env: StoreEnv, pool: string, id: string): Promise<boolean> {
  const keys = env.keys.pool(pool);
  const replies = await env.runner.call((c) =>
    c.multi().hdel(keys.sources, id).hdel(keys.sourceStatus, id).del(keys.sourceMembers(id)).exec(),
  );
  return Number(replies?.[0]?.[1] ?? 0) === 1;
}

export async function putSourceStatus(env: StoreEnv, pool: string, id: string, status: SourceStatus): Promise<void> {
  const keys = env.keys.pool(pool);
  await env.runner.call(async (c) => {
    if ((await c.hexists(keys.sources, id)) === 1) await c.hset(keys.sourceStatus, id, JSON.stringify(status));
  });
}

export async function sourceMembers(env: StoreEnv, pool: string, id: string): Promise<string[]> {
  const key = env.keys.pool(pool).sourceMembers(id);
  return env.runner.call((c) => c.smembers(key));
}

export async function sourceMemberCount(env: StoreEnv, pool: string, id: string): Promise<number> {
  const key = env.keys.pool(pool).sourceMembers(id);
  return env.runner.call((c) => c.scard(key));
}

export async function setSourceMembers(env: StoreEnv, pool: string, id: string, ids: readonly string[]): Promise<void> {
  const keys = env.keys.pool(pool);
  const key = keys.sourceMembers(id);
  await env.runner.call(async (c) => {
    // a source removed meanwhile (a refresh that was running) gets no member list back
    if ((await c.hexists(keys.sources, id)) !== 1) return;
    const m = c.multi().del(key);
    for (let i = 0; i < ids.length; i += CHUNK) m.sadd(key, ...ids.slice(i, i + CHUNK));
    await m.exec();
  });
}

function record(raw: string | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(raw);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const text = (v: unknown): string => (typeof v === "string" ? v : "");
const count = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

function decodeSpec(raw: string): SourceSpec | undefined {
  const r = record(raw);
  if (r === undefined) return undefined;
  const labels: Record<string, string> = {};
  if (typeof r["labels"] === "object" && r["labels"] !== null) {
    for (const [k, v] of Object.entries(r["labels"])) if (typeof v === "string") labels[k] = v;
  }
  return {
    id: text(r["id"]),
    pool: text(r["pool"]),
    url: text(r["url"]),
    format: r["format"] === "json" ? "json" : "lines",
    jsonPath: text(r["jsonPath"]),
    headersFile: text(r["headersFile"]),
    intervalMs: count(r["intervalMs"]),
    tier: text(r["tier"]),
    labels,
    createdAt: count(r["createdAt"]),
  };
}

function decodeStatus(raw: string | undefined): SourceStatus {
  const r = record(raw);
  if (r === undefined) return NO_SOURCE_STATUS;
  const result = r["result"];
  return {
    lastRefreshAt: count(r["lastRefreshAt"]),
    lastSuccessAt: count(r["lastSuccessAt"]),
    result: result === "ok" || result === "fetch_error" || result === "malformed" || result === "shrink" ? result : "",
    error: text(r["error"]),
    listed: count(r["listed"]),
    added: count(r["added"]),
    removed: count(r["removed"]),
  };
}
