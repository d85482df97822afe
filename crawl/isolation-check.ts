/**
 * The isolation group's check (CRAWL_ISOLATION), from the sites' own request log alone:
 *
 * - cross-site overlaps: pairs of requests from one client IP to two different sites of the group
 *   whose [start, end] intervals overlap (one proxy inside two platforms of the group at once).
 *   Requests to the same site, and intervals that only touch (one ends when the other starts), do
 *   not count;
 * - affinity violations (window > 0): moves of an IP from one site of the group to another — a
 *   request whose site is not that of the IP's previous request — that start less than the window
 *   after the END of the IP's last request to another site of the group. The broker measures its
 *   window from the lease's end, which is never before the request's end, so a correct broker
 *   never shows one.
 *
 * Sites outside the group are ignored. Pure: no I/O.
 */
import type { RequestLogEntry } from "./sites.js";

/** A request as the check reads it. */
export type LoggedRequest = Pick<RequestLogEntry, "site" | "ip" | "start" | "end">;

/** Two requests of one IP to two sites of the group in flight at the same time. */
export interface CrossSiteOverlap {
  readonly ip: string;
  readonly first: LoggedRequest;
  readonly second: LoggedRequest;
}

/** A move of one IP to another site of the group sooner than the window allows. */
export interface AffinityViolation {
  readonly ip: string;
  /** The site of the IP's latest-ending request elsewhere in the group, and when it ended. */
  readonly from: string;
  readonly fromEnd: number;
  /** The site it moved to, and when that request started. */
  readonly to: string;
  readonly toStart: number;
  /** toStart − fromEnd, ms (negative when the two overlap). */
  readonly gapMs: number;
}

export interface IsolationCheck {
  readonly crossSiteOverlaps: readonly CrossSiteOverlap[];
  /** Moves of an IP between sites of the group (the violations are among them). */
  readonly moves: number;
  /** Empty when the window is 0. */
  readonly affinityViolations: readonly AffinityViolation[];
}

/** The group's requests per IP, each list sorted by start. */
function byIp(log: readonly LoggedRequest[], group: ReadonlySet<string>): Map<string, LoggedRequest[]> {
  const out = new Map<string, LoggedRequest[]>();
  for (const e of log) {
    if (!group.has(e.site)) continue;
    const list = out.get(e.ip) ?? [];
    list.push(e);
    out.set(e.ip, list);
  }
  for (const list of out.values()) list.sort((a, b) => a.start - b.start || a.end - b.end);
  return out;
}

/** Every pair of requests from one IP to two different sites of `group` that overlap. */
export function crossSiteOverlaps(log: readonly LoggedRequest[], group: ReadonlySet<string>): CrossSiteOverlap[] {
  const out: CrossSiteOverlap[] = [];
  for (const [ip, list] of byIp(log, group)) {
    for (let i = 0; i < list.length; i++) {
      const a = list[i]!;
      for (let j = i + 1; j < list.length; j++) {
        const b = list[j]!;
        if (b.start >= a.end) break;
        if (b.site !== a.site) out.push({ ip, first: a, second: b });
      }
    }
  }
  return out;
}

/** The moves of one IP's requests (sorted by start) and those sooner than `windowMs`. */
function movesOf(ip: string, list: readonly LoggedRequest[], windowMs: number): { moves: number; violations: AffinityViolation[] } {
  const lastEnd = new Map<string, number>();
  const violations: AffinityViolation[] = [];
  let moves = 0;
  let previous: string | undefined;
  for (const r of list) {
    if (previous !== undefined && r.site !== previous) {
      moves += 1;
      let from = previous;
      let fromEnd = Number.NEGATIVE_INFINITY;
      for (const [site, end] of lastEnd) {
        if (site !== r.site && end > fromEnd) {
          from = site;
          fromEnd = end;
        }
      }
      const gapMs = r.start - fromEnd;
      if (windowMs > 0 && gapMs < windowMs) violations.push({ ip, from, fromEnd, to: r.site, toStart: r.start, gapMs });
    }
    lastEnd.set(r.site, Math.max(lastEnd.get(r.site) ?? Number.NEGATIVE_INFINITY, r.end));
    previous = r.site;
  }
  return { moves, violations };
}

/** The whole check of one run's log against the group's sites and affinity window. */
export function checkIsolation(log: readonly LoggedRequest[], group: ReadonlySet<string>, windowMs: number): IsolationCheck {
  let moves = 0;
  const affinityViolations: AffinityViolation[] = [];
  for (const [ip, list] of byIp(log, group)) {
    const m = movesOf(ip, list, windowMs);
    moves += m.moves;
    affinityViolations.push(...m.violations);
  }
  return { crossSiteOverlaps: crossSiteOverlaps(log, group), moves, affinityViolations };
}
