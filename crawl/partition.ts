/**
 * The partition mode's timeline (CRAWL_PARTITION_AT_S): one worker cut off the broker by a silent
 * partition at `cutAt`. Pages per second through the window (the fleet, and the cut worker alone),
 * the seconds in which the fleet took no page, 429s, bans and overlaps in the window and after the
 * cut (from the sites' log), the fleet's speed before the cut and from 8 s after it, how soon the
 * cut worker took a page through its fallback pool, and the efficiency after the cut.
 */
import { theoreticalMaxPerMinute } from "./report.js";
import { countOverlaps } from "./sites.js";
import type { RequestLogEntry } from "./sites.js";
import type { FetchReport } from "./workers/common.js";

/** "Settled": the speed after the cut is measured from this long after it. */
export const SETTLE_MS = 8_000;

export interface PartitionInput {
  readonly reports: readonly FetchReport[];
  readonly log: readonly RequestLogEntry[];
  /** Epoch ms of every ban the sites gave (bans.ts). */
  readonly bans: readonly number[];
  /** The id of the worker cut off (`FetchReport.worker`). */
  readonly worker: string;
  /** Epoch ms: the cut, and the measured window. */
  readonly cutAt: number;
  readonly startAt: number;
  readonly endAt: number;
  /** What computeRow's efficiency is measured against. */
  readonly proxies: number;
  readonly siteIntervalsMs: readonly number[];
}

/** Pages (distinct, with real content) in a stretch of the window: the fleet's, the cut worker's, the others'. */
export interface Speed {
  readonly seconds: number;
  readonly pages: number;
  readonly pagesPerSecond: number;
  readonly cutWorkerPages: number;
  readonly otherPages: number;
}

/** What the sites saw in a stretch of the window. */
export interface Incidents {
  readonly rateLimited: number;
  readonly bans: number;
  readonly overlaps: number;
}

export interface PartitionTimeline {
  readonly worker: string;
  readonly cutAtS: number;
  readonly windowS: number;
  /** Pages per second, second by second through the window: the fleet, and the cut worker alone. */
  readonly perSecond: readonly number[];
  readonly cutWorkerPerSecond: readonly number[];
  /** Indexes of the seconds in which the fleet took no page, and of the first second with a page. */
  readonly emptySeconds: readonly number[];
  readonly firstPageSecond: number | undefined;
  readonly window: Incidents;
  readonly afterCut: Incidents;
  readonly before: Speed;
  /** From SETTLE_MS after the cut to the end of the window (undefined: the window ends first). */
  readonly settled: Speed | undefined;
  /** settled ÷ before, pages/s (undefined: no page before the cut, or no settled stretch). */
  readonly ratio: number | undefined;
  readonly pagesPerMinuteAfterCut: number;
  /** pagesPerMinuteAfterCut ÷ theoreticalMaxPerMinute. */
  readonly efficiencyAfterCut: number;
  /** ms from the cut to the cut worker's first page through its fallback pool (undefined: none). */
  readonly firstFallbackPageMs: number | undefined;
}

/** The pages of `inside` (taken in a stretch of `seconds`), in all and by who took them. */
function speed(inside: readonly FetchReport[], worker: string, seconds: number): Speed {
  const distinct = (rs: readonly FetchReport[]): number => new Set(rs.map((r) => r.url)).size;
  const pages = distinct(inside);
  return {
    seconds,
    pages,
    pagesPerSecond: seconds > 0 ? pages / seconds : 0,
    cutWorkerPages: distinct(inside.filter((r) => r.worker === worker)),
    otherPages: distinct(inside.filter((r) => r.worker !== worker)),
  };
}

function incidents(input: PartitionInput, from: number): Incidents {
  const entries = input.log.filter((e) => e.start >= from && e.start <= input.endAt);
  return {
    rateLimited: entries.filter((e) => e.answer === "429").length,
    bans: input.bans.filter((t) => t >= from && t <= input.endAt).length,
    overlaps: countOverlaps(entries),
  };
}

function perSecond(taken: readonly FetchReport[], startAt: number, seconds: number): number[] {
  const counts = Array.from({ length: seconds }, () => 0);
  for (const r of taken) {
    const i = Math.min(seconds - 1, Math.floor((r.t - startAt) / 1000));
    counts[i] = (counts[i] ?? 0) + 1;
  }
  return counts;
}

export function partitionTimeline(input: PartitionInput): PartitionTimeline {
  const { startAt, endAt, cutAt, worker } = input;
  const taken = input.reports.filter((r) => r.accepted && r.real && r.t >= startAt && r.t <= endAt);
  const seconds = Math.max(1, Math.ceil((endAt - startAt) / 1000));
  const fleet = perSecond(taken, startAt, seconds);
  const firstPage = fleet.findIndex((n) => n > 0);
  /** [from, to), and a stretch to the end of the window includes endAt, as computeRow does. */
  const stretch = (from: number, to: number): Speed =>
    speed(
      taken.filter((r) => r.t >= from && (r.t < to || (to === endAt && r.t === endAt))),
      worker,
      Math.max(0, (to - from) / 1000),
    );
  const before = stretch(startAt, cutAt);
  const settled = cutAt + SETTLE_MS < endAt ? stretch(cutAt + SETTLE_MS, endAt) : undefined;
  const afterCut = stretch(cutAt, endAt);
  const pagesPerMinuteAfterCut = afterCut.seconds > 0 ? (afterCut.pages * 60) / afterCut.seconds : 0;
  const fallback = taken.filter((r) => r.worker === worker && r.t >= cutAt && r.source === "fallback").map((r) => r.t);
  return {
    worker,
    cutAtS: (cutAt - startAt) / 1000,
    windowS: (endAt - startAt) / 1000,
    perSecond: fleet,
    cutWorkerPerSecond: perSecond(
      taken.filter((r) => r.worker === worker),
      startAt,
      seconds,
    ),
    emptySeconds: fleet.flatMap((n, i) => (n === 0 ? [i] : [])),
    firstPageSecond: firstPage < 0 ? undefined : firstPage,
    window: incidents(input, startAt),
    afterCut: incidents(input, cutAt),
    before,
    settled,
    ratio: settled !== undefined && before.pagesPerSecond > 0 ? settled.pagesPerSecond / before.pagesPerSecond : undefined,
    pagesPerMinuteAfterCut,
    efficiencyAfterCut: pagesPerMinuteAfterCut / theoreticalMaxPerMinute(input.proxies, input.siteIntervalsMs),
    firstFallbackPageMs: fallback.length === 0 ? undefined : Math.min(...fallback) - cutAt,
  };
}
