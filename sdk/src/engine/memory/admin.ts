/**
 * Internal to the in-memory engine: the admin operations that change proxies
 * (store-semantics §admin).
 */
import type { ProxySpecInput } from "../../model/model.js";
import { storedIdOf } from "../../model/proxy-id.js";
import type { EngineContext } from "./context.js";
import type { PoolState } from "./pool-state.js";
import type { ProxyRecord } from "./records.js";

/** New ids → ACTIVE with the initial score; known ids get url, tier and labels replaced. */
export function addProxies(ctx: EngineContext, pool: PoolState, specs: readonly ProxySpecInput[]): { added: string[]; updated: string[] } {
  const added: string[] = [];
  const updated: string[] = [];
  const fresh = new Set<ProxyRecord>();
  for (const given of specs) {
    // a proxy stored under its endpoint before ids carried usernames keeps that id
    const id = storedIdOf(given.id, (at) => pool.proxies.get(at));
    const spec = id === given.id ? given : { ...given, id };
    const rec = pool.proxies.get(spec.id);
    if (rec === undefined) {
      const created = newRecord(ctx, spec);
      pool.proxies.set(spec.id, created);
      pool.exits.add(spec.id);
      fresh.add(created);
      added.push(spec.id);
      continue;
    }
    updated.push(spec.id);
    const reindex = rec.state === "ACTIVE" && !fresh.has(rec);
    if (reindex) pool.unindex(rec);
    rec.url = spec.url;
    rec.tier = spec.tier;
    rec.labels = { ...spec.labels };
    if (reindex) pool.index(rec);
  }
  if (fresh.size > 0) {
    pool.indexMany([...fresh]);
    pool.idsChanged();
  }
  return { added, updated };
}

/**
 * The proxies go with their index and quarantine entries; their pairs and leases stay, and so
 * does their membership of their exit (G9) for a former exit's time.
 */
export function removeProxies(pool: PoolState, ids: readonly string[], now: number): { removed: string[]; notFound: string[] } {
  const removed: string[] = [];
  const notFound: string[] = [];
  const active: ProxyRecord[] = [];
  for (const id of ids) {
    const rec = pool.proxies.get(id);
    if (rec === undefined) {
      notFound.push(id);
      continue;
    }
    removed.push(id);
    if (rec.state === "ACTIVE") active.push(rec);
    pool.quarantine.delete(id);
    pool.proxies.delete(id);
    pool.exits.remove(id, now);
  }
  if (active.length > 0) pool.unindexMany(active);
  if (removed.length > 0) pool.idsChanged();
  return { removed, notFound };
}

/** QUARANTINED or BLACKLISTED → ACTIVE with `scoreAfterQuarantine`, count reset. */
export function restoreProxies(ctx: EngineContext, pool: PoolState, ids: readonly string[]): { restored: string[]; notFound: string[] } {
  const restored: string[] = [];
  const notFound: string[] = [];
  for (const id of ids) {
    const rec = pool.proxies.get(id);
    if (rec === undefined) {
      notFound.push(id);
      continue;
    }
    restored.push(id);
    if (rec.state === "ACTIVE") continue;
    rec.quarantineCount = 0;
    pool.activate(rec, ctx.scoring.scoreAfterQuarantine);
  }
  return { restored, notFound };
}

function newRecord(ctx: EngineContext, spec: ProxySpecInput): ProxyRecord {
  return {
    id: spec.id,
    url: spec.url,
    tier: spec.tier,
    labels: { ...spec.labels },
    score: ctx.scoring.initialScore,
    state: "ACTIVE",
    latencyEwmaMs: 0,
    successCount: 0,
    failureCount: 0,
    lastUsedBy: "",
    lastUsedAt: 0,
    quarantineUntil: 0,
    quarantineCount: 0,
    exitIp: "",
  };
}
