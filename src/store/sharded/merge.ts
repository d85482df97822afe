/**
 * What a sharded pool answers for the whole pool, from what its shards answered: pages of
 * proxies in id order, counts, workers, adaptive pacing and events.
 */
import {
  MAX_WORKERS_PER_POOL,
  type DomainUse,
  type DomainPacing,
  type PoolEvent,
  type PoolStats,
  type ProxyView,
  type WorkerSeen,
} from "@proxybroker/sdk/model";
import { byteOrder } from "../redis/admin.js";
import { joinCursors } from "./composite.js";

/** One shard's page of `listProxies`. */
export interface ProxyPage {
  readonly proxies: readonly ProxyView[];
  readonly next: string;
}

/**
 * The first `size` proxies of the shards' pages, in id order (the byte order the store lists
 * in); `next` is the last id when any shard has more, or when some were left out.
 */
export function mergePages(pages: readonly ProxyPage[], size: number): { proxies: ProxyView[]; next: string } {
  const all = pages.flatMap((p) => p.proxies).sort((a, b) => byteOrder(a.id, b.id));
  const proxies = all.slice(0, Math.max(1, size));
  const more = all.length > proxies.length || pages.some((p) => p.next !== "");
  return { proxies, next: more ? (proxies.at(-1)?.id ?? "") : "" };
}

/** Proxy counts summed over the shards; live workers counted once each (`liveWorkers`). */
export function sumStats(stats: readonly PoolStats[], liveWorkers: number): PoolStats {
  const sum = (f: (s: PoolStats) => number) => stats.reduce((n, s) => n + f(s), 0);
  return {
    total: sum((s) => s.total),
    active: sum((s) => s.active),
    quarantined: sum((s) => s.quarantined),
    blacklisted: sum((s) => s.blacklisted),
    disabled: sum((s) => s.disabled),
    liveWorkers,
  };
}

/**
 * Each worker once, last seen (and last in fallback) on whichever shard saw it last; id order. At
 * most MAX_WORKERS_PER_POOL, the most recently seen (each shard keeps that many on its own).
 */
/** `{[key]: the later of two optional times}`, or nothing when neither has one. */
function latest<K extends "yieldsLeasesAt" | "listsAt" | "heardAt">(key: K, a: WorkerSeen, b: WorkerSeen): Partial<Record<K, number>> {
  const at = Math.max(a[key] ?? 0, b[key] ?? 0);
  return at > 0 ? ({ [key]: at } as Partial<Record<K, number>>) : {};
}

/** The claims of whichever record has the later latest claim (shard 0 keeps them: at most one has any). */
function laterClaims(a: WorkerSeen, b: WorkerSeen): Pick<WorkerSeen, "claims"> {
  if (a.claims === undefined && b.claims === undefined) return {};
  const version = (w: WorkerSeen): number => w.claims?.[0]?.version ?? -1;
  return { claims: (version(a) >= version(b) ? a.claims : b.claims) ?? [] };
}

export function mergeWorkers(lists: readonly (readonly WorkerSeen[])[]): WorkerSeen[] {
  const byId = new Map<string, WorkerSeen>();
  for (const w of lists.flat()) {
    const had = byId.get(w.workerId);
    byId.set(
      w.workerId,
      had === undefined
        ? w
        : {
            workerId: w.workerId,
            lastSeenAt: Math.max(had.lastSeenAt, w.lastSeenAt),
            fallbackPoolAt: Math.max(had.fallbackPoolAt, w.fallbackPoolAt),
            ...latest("yieldsLeasesAt", had, w),
            ...latest("listsAt", had, w),
            ...latest("heardAt", had, w),
            ...laterClaims(had, w),
          },
    );
  }
  let all = [...byId.values()];
  if (all.length > MAX_WORKERS_PER_POOL) all = all.sort((x, y) => y.lastSeenAt - x.lastSeenAt).slice(0, MAX_WORKERS_PER_POOL);
  return all.sort((x, y) => byteOrder(x.workerId, y.workerId));
}

/**
 * One record per (worker, domain-key) from every shard's: the earliest first use of the shards
 * that saw it within the latest listing, the latest last use.
 */
export function mergeDomainUses(lists: readonly (readonly DomainUse[])[]): DomainUse[] {
  const byKey = new Map<string, DomainUse>();
  for (const u of lists.flat()) {
    const key = `${u.workerId}\n${u.domainKey}`;
    const had = byKey.get(key);
    byKey.set(
      key,
      had === undefined
        ? u
        : { ...u, firstUsedAt: Math.min(had.firstUsedAt, u.firstUsedAt), lastUsedAt: Math.max(had.lastUsedAt, u.lastUsedAt) },
    );
  }
  return [...byKey.values()];
}

/** The slower of two pacing states of one domain-key (each shard adapts on its own). */
function slower(a: DomainPacing, b: DomainPacing): DomainPacing {
  return b.adaptiveMs > a.adaptiveMs || (b.adaptiveMs === a.adaptiveMs && b.learnedMs > a.learnedMs) ? b : a;
}

/**
 * Adaptive pacing of a sharded pool: per domain-key the slowest shard's. With `asked` domain-keys,
 * one entry each in that order; else every adapted one, highest interval first, `limit` at most.
 */
export function mergePacing(lists: readonly (readonly DomainPacing[])[], asked: readonly string[], limit: number): DomainPacing[] {
  const byKey = new Map<string, DomainPacing>();
  for (const p of lists.flat()) {
    const had = byKey.get(p.domainKey);
    byKey.set(p.domainKey, had === undefined ? p : slower(had, p));
  }
  if (asked.length > 0) return asked.flatMap((dk) => byKey.get(dk) ?? []);
  return [...byKey.values()]
    .sort((a, b) => b.adaptiveMs - a.adaptiveMs || byteOrder(a.domainKey, b.domainKey))
    .slice(0, Math.max(0, limit));
}

/** One shard's read of its event stream. */
export interface EventRead {
  readonly events: readonly PoolEvent[];
  readonly cursor: string;
}

/**
 * The first `count` events of the shards' reads in time order (ties: shard order). Each event's id
 * is the pool cursor just after it, and `cursor` the one after the last taken: reading on from it
 * misses and repeats nothing, whatever a shard had beyond what was taken.
 */
export function mergeEvents(from: readonly string[], reads: readonly EventRead[], count: number): { events: PoolEvent[]; cursor: string } {
  // where each shard stands before anything is taken: a shard that read nothing at its own cursor
  // ("$" made a real id); one that read, just before its first event (when it began at "$")
  const cursors = reads.map((r, shard) => {
    const first = r.events[0];
    if (first === undefined) return r.cursor;
    return from[shard] === "$" ? streamIdBefore(first.id) : (from[shard] ?? "");
  });
  const all = reads.flatMap((r, shard) => r.events.map((e, i) => ({ e, shard, i })));
  all.sort((a, b) => a.e.at - b.e.at || a.shard - b.shard || a.i - b.i);
  const events: PoolEvent[] = [];
  for (const { e, shard } of all.slice(0, Math.max(0, count))) {
    cursors[shard] = e.id;
    events.push({ id: joinCursors(cursors), at: e.at, kind: e.kind, proxyId: e.proxyId, domainKey: e.domainKey, detail: e.detail });
  }
  return { events, cursor: joinCursors(cursors) };
}

/** The stream id just before `id` (`<ms>-<seq>`): reading after it starts at `id`. */
export function streamIdBefore(id: string): string {
  const [ms = "0", seq = "0"] = id.split("-");
  if (Number(seq) > 0) return `${ms}-${Number(seq) - 1}`;
  return Number(ms) > 0 ? `${Number(ms) - 1}-18446744073709551615` : "0-0";
}
