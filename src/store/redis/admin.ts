/**
 * Internal to the Redis store: admin operations and reads (store-semantics §admin).
 */
import { decodeClaims } from "./claims-codec.js";
import { exitAudit, StaleTermError } from "@proxybroker/sdk/engine";
import type {
  HealthResult,
  PoolStats,
  ProxyAction,
  ProxyActionResult,
  ProxySpecInput,
  ProxyView,
  WorkerSeen,
} from "@proxybroker/sdk/model";
import { ScriptCode, ScriptReplyError } from "./errors.js";
import { encodeLabels } from "./labels.js";
import { appendAudit } from "./events.js";
import { asArray, decodeProxy, num, str, VIEW_FIELDS } from "./replies.js";
import type { StoreEnv } from "./store-env.js";
import { argv, type ScriptArg } from "./script-args.js";
import { keyv } from "./script-keys.js";

/** Split `items` by the 0/1 flags of a script reply. */
function byFlag(items: readonly string[], reply: unknown): [string[], string[]] {
  const flags = asArray(reply);
  if (flags.length !== items.length) throw new ScriptReplyError(`expected ${items.length} flags, got ${flags.length}`);
  const yes: string[] = [];
  const no: string[] = [];
  for (const [i, id] of items.entries()) (num(flags, i) === 1 ? yes : no).push(id);
  return [yes, no];
}

/** New ids → ACTIVE with the initial score; known ids get url, tier and labels replaced. */
export async function addProxies(
  env: StoreEnv,
  pool: string,
  specs: readonly ProxySpecInput[],
): Promise<{ added: string[]; updated: string[] }> {
  if (specs.length === 0) return { added: [], updated: [] };
  const { added, updated } = await addProxiesInLayout(env, pool, specs, undefined);
  return { added, updated };
}

/**
 * `addProxies`, checking in the same step that `pool` — a pool's shard 0 — is stored in
 * `shards` shards (1 = unsharded) and recording it when none was (addProxies-3.lua). `layout` is
 * the layout found; when it is not `shards`, nothing was written. Without `shards` nothing is
 * checked (another shard of a pool) and `layout` is undefined.
 */
export async function addProxiesInLayout(
  env: StoreEnv,
  pool: string,
  specs: readonly ProxySpecInput[],
  shards: number | undefined,
): Promise<{ layout: number | undefined; added: string[]; updated: string[] }> {
  const keys = env.keys.pool(pool);
  const args: ScriptArg[] = argv("addProxies", { base: keys.base, initialScore: env.scoring.initialScore, shards: shards ?? "" });
  for (const s of specs) args.push(...argv("proxySpec", { id: s.id, url: s.url, tier: s.tier, labels: encodeLabels(s.labels) }));
  const reply = asArray(
    await env.runner.run("addProxies", keyv("addProxiesKeys", { all: keys.all, index: keys.index, meta: keys.meta }), args),
  );
  const layout = shards === undefined ? undefined : num(reply, 0);
  if (layout !== shards) return { layout, added: [], updated: [] };
  const flags = reply.slice(1);
  if (flags.length !== specs.length) throw new ScriptReplyError(`expected ${specs.length} entries, got ${flags.length}`);
  const added: string[] = [];
  const updated: string[] = [];
  // 1 added, 0 updated, a string: updated under that id (a legacy `host:port`, addProxies-3.lua)
  specs.forEach((s, i) => {
    const f = flags[i];
    if (typeof f === "string") updated.push(f);
    else (num(flags, i) === 1 ? added : updated).push(s.id);
  });
  return { layout, added, updated };
}

/** The proxies go with their index and quarantine entries; pairs and leases stay. */
export async function removeProxies(
  env: StoreEnv,
  pool: string,
  ids: readonly string[],
): Promise<{ removed: string[]; notFound: string[] }> {
  if (ids.length === 0) return { removed: [], notFound: [] };
  const keys = env.keys.pool(pool);
  const reply = await env.runner.run(
    "removeProxies",
    keyv("removeProxiesKeys", { all: keys.all, index: keys.index, quarantine: keys.quarantine, blacklist: keys.blacklist }),
    [...argv("removeProxies", { base: keys.base }), ...ids],
  );
  const [removed, notFound] = byFlag(ids, reply);
  return { removed, notFound };
}

/** QUARANTINED or BLACKLISTED → ACTIVE with `scoreAfterQuarantine`, count reset. */
export async function restoreProxies(
  env: StoreEnv,
  pool: string,
  ids: readonly string[],
): Promise<{ restored: string[]; notFound: string[] }> {
  if (ids.length === 0) return { restored: [], notFound: [] };
  const keys = env.keys.pool(pool);
  const reply = await env.runner.run(
    "restoreProxies",
    keyv("restoreProxiesKeys", { index: keys.index, quarantine: keys.quarantine, blacklist: keys.blacklist }),
    [...argv("restoreProxies", { base: keys.base, score: env.scoring.scoreAfterQuarantine }), ...ids],
  );
  const [restored, notFound] = byFlag(ids, reply);
  return { restored, notFound };
}

/** Up to `size` proxies with ids > `after` in byte order; `next` = last id when more remain. */
export async function listProxies(
  env: StoreEnv,
  pool: string,
  page: { size: number; after: string },
): Promise<{ proxies: ProxyView[]; next: string }> {
  const keys = env.keys.pool(pool);
  const size = Math.max(1, Math.floor(Number.isFinite(page.size) ? page.size : 1));
  const a = asArray(
    await env.runner.run(
      "listProxies",
      keyv("listProxiesKeys", { all: keys.all }),
      argv("listProxies", { base: keys.base, after: page.after, size }),
    ),
  );
  const proxies: ProxyView[] = [];
  for (let i = 1; i < a.length; i += VIEW_FIELDS + 1) proxies.push(decodeProxy(a, i));
  const last = proxies[proxies.length - 1];
  return { proxies, next: num(a, 0) === 1 && last !== undefined ? last.id : "" };
}

const HEALTH_CODES: Readonly<Record<HealthResult, string>> = { pass: "p", fail: "f", error: "e" };

/** One health check to record: its result, the leader term (0 = not fenced), the exit IP it showed ("" = none). */
export interface HealthCheckRecord {
  readonly id: string;
  readonly result: HealthResult;
  readonly term: number;
  readonly exitIp: string;
}

/**
 * Apply one health check result and the exit IP it showed ("" = none); unknown proxy → undefined;
 * a stale term throws `StaleTermError`.
 */
export async function recordHealth(
  env: StoreEnv,
  pools: { readonly pool: string; readonly auditPool: string },
  check: HealthCheckRecord,
): Promise<ProxyView | undefined> {
  const { pool, auditPool } = pools;
  const { id, result, term, exitIp } = check;
  const keys = env.keys.pool(pool);
  const a = asArray(
    await env.runner.run(
      "recordHealth",
      keyv("recordHealthKeys", {
        proxy: keys.proxy(id),
        index: keys.index,
        quarantine: keys.quarantine,
        blacklist: keys.blacklist,
        meta: keys.meta,
      }),
      argv("recordHealth", {
        base: keys.base,
        now: env.now(),
        proxyId: id,
        result: HEALTH_CODES[result],
        u: env.random(),
        term: term > 0 ? term : "",
        exitIp,
      }),
    ),
  );
  if (num(a, 0) === ScriptCode.ProxyNotFound) return undefined;
  if (num(a, 0) === ScriptCode.StaleTerm)
    throw new StaleTermError(`a health-check result of term ${term} was refused: a newer leader checks pool ${pool}`);
  a[0] = id;
  const view = decodeProxy(a, 0);
  const before = str(a, VIEW_FIELDS + 1);
  // the audit trail is one stream for every pool (outside the pool's hash tag): written after
  if (before !== "") await appendAudit(env, exitAudit(auditPool, { proxyId: id, from: before === "none" ? "" : before, to: view.exitIp }));
  return view;
}

/** An admin's action on proxies (proxyAction-3.lua): each id changed, unchanged or not found. */
export async function proxyAction(env: StoreEnv, pool: string, ids: readonly string[], action: ProxyAction): Promise<ProxyActionResult> {
  const keys = env.keys.pool(pool);
  const code = { disable: "D", enable: "E", ban: "B", unban: "U" }[action.kind];
  const dk = action.kind === "ban" || action.kind === "unban" ? action.domainKey : "";
  const ttl = action.kind === "ban" ? Math.max(1, Math.floor(action.ttlMs)) : 0;
  const result: ProxyActionResult = { changed: [], unchanged: [], notFound: [] };
  if (ids.length === 0) return result;
  const args = argv("proxyAction", { base: keys.base, action: code, domainKey: dk, ttlMs: ttl, now: env.now() });
  const reply = asArray(
    await env.runner.run("proxyAction", keyv("proxyActionKeys", { index: keys.index, quarantine: keys.quarantine, meta: keys.meta }), [
      ...args,
      ...ids,
    ]),
  );
  ids.forEach((id, i) => {
    const r = num(reply, i);
    (r === 1 ? result.changed : r === 0 ? result.unchanged : result.notFound).push(id);
  });
  return result;
}

/** Counts by state, and workers that acquired at or after `liveSinceMs`. */
export async function poolStats(env: StoreEnv, pool: string, liveSinceMs: number): Promise<PoolStats> {
  const keys = env.keys.pool(pool);
  const a = asArray(
    await env.runner.run(
      "poolStats",
      keyv("poolStatsKeys", {
        all: keys.all,
        index: keys.index,
        quarantine: keys.quarantine,
        blacklist: keys.blacklist,
        workers: keys.workers,
      }),
      argv("poolStats", { liveSince: Math.ceil(liveSinceMs) }),
    ),
  );
  const total = num(a, 0);
  const active = num(a, 1);
  const quarantined = num(a, 2);
  const blacklisted = num(a, 3);
  const liveWorkers = num(a, 4);
  const disabled = Math.max(0, total - active - quarantined - blacklisted);
  return { total, active, quarantined, blacklisted, disabled, liveWorkers };
}

/** Byte order of UTF-8 strings (Redis' order). */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** Workers that acquired at or after `sinceMs`, by worker id. */
export async function liveWorkers(env: StoreEnv, pool: string, sinceMs: number, withClaims = false): Promise<WorkerSeen[]> {
  const keys = env.keys.pool(pool);
  const live = await env.runner.call((c) => c.zrangebyscore(keys.workers, sinceMs, "+inf", "WITHSCORES"));
  const ids: string[] = [];
  for (let i = 0; i + 1 < live.length; i += 2) ids.push(live[i]!);
  const fallbackAt = ids.length === 0 ? [] : await env.runner.call((c) => c.zmscore(keys.fallbackWorkers, ...ids));
  const yieldsAt = ids.length === 0 ? [] : await env.runner.call((c) => c.zmscore(keys.yieldingWorkers, ...ids));
  const listsAt = ids.length === 0 ? [] : await env.runner.call((c) => c.zmscore(keys.listsWorkers, ...ids));
  const heardAt = ids.length === 0 ? [] : await env.runner.call((c) => c.zmscore(keys.heardWorkers, ...ids));
  const claims =
    ids.length === 0 || !withClaims ? [] : await env.runner.call((c) => c.mget(...ids.map((id) => `${keys.claimsPrefix}${id}`)));
  const seen: WorkerSeen[] = ids.map((workerId, i) => ({
    workerId,
    lastSeenAt: Number(live[2 * i + 1]),
    fallbackPoolAt: Number(fallbackAt[i] ?? 0),
    ...(Number(yieldsAt[i] ?? 0) > 0 ? { yieldsLeasesAt: Number(yieldsAt[i]) } : {}),
    ...(Number(listsAt[i] ?? 0) > 0 ? { listsAt: Number(listsAt[i]) } : {}),
    ...(Number(heardAt[i] ?? 0) > 0 ? { heardAt: Number(heardAt[i]) } : {}),
    ...(withClaims ? { claims: decodeClaims(claims[i]) } : {}),
  }));
  return seen.sort((x, y) => byteOrder(x.workerId, y.workerId));
}
