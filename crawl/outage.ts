/**
 * The crash mode's timeline (CRAWL_KILL_AT_S): pages per second before the broker was killed,
 * while it was down (the SDK's fallback pool), and after it listened again; how soon the first
 * page came after each switch; overlaps in each phase, from the sites' log.
 */
import { countOverlaps } from "./sites.js";
import type { RequestLogEntry } from "./sites.js";
import type { FetchReport } from "./workers/common.js";

/** One phase of the run. */
export interface Phase {
  readonly seconds: number;
  readonly pages: number;
  readonly pagesPerSecond: number;
  readonly overlaps: number;
  readonly rateLimited: number;
}

export interface OutageTimeline {
  readonly killedAtS: number;
  readonly listeningAtS: number;
  readonly before: Phase;
  readonly during: Phase;
  readonly after: Phase;
  /** From 2 s after the broker listened again to the end: the speed it is back to. */
  readonly afterSettled: Phase;
  /** ms from the kill to the first page taken after it (undefined: none). */
  readonly firstPageAfterKillMs: number | undefined;
  /** ms from the broker listening again to the first page a broker lease fetched (undefined: none). */
  readonly firstBrokerPageAfterRestartMs: number | undefined;
  /** Pages per second, second by second through the window. */
  readonly perSecond: readonly number[];
}

/** "Back within 2 s": the after phase counted from this long after the broker listened again. */
const SETTLE_MS = 2_000;

function phase(reports: readonly FetchReport[], log: readonly RequestLogEntry[], from: number, to: number): Phase {
  const pages = new Set(reports.filter((r) => r.t >= from && r.t < to && r.accepted && r.real).map((r) => r.url)).size;
  const seconds = Math.max(0.001, (to - from) / 1000);
  const entries = log.filter((e) => e.start >= from && e.start < to);
  return {
    seconds,
    pages,
    pagesPerSecond: pages / seconds,
    overlaps: countOverlaps(entries),
    rateLimited: entries.filter((e) => e.answer === "429").length,
  };
}

export function outageTimeline(
  reports: readonly FetchReport[],
  log: readonly RequestLogEntry[],
  crash: { readonly killedAt: number; readonly listeningAt: number },
  window: { readonly startAt: number; readonly endAt: number },
): OutageTimeline {
  const taken = reports.filter((r) => r.accepted && r.real);
  const firstAfter = (t: number, source?: string): number | undefined => {
    const hits = taken.filter((r) => r.t >= t && (source === undefined || r.source === source)).map((r) => r.t);
    return hits.length === 0 ? undefined : Math.min(...hits) - t;
  };
  const seconds = Math.ceil((window.endAt - window.startAt) / 1000);
  const perSecond = Array.from({ length: seconds }, (_, i) => {
    const from = window.startAt + i * 1000;
    return taken.filter((r) => r.t >= from && r.t < from + 1000).length;
  });
  return {
    killedAtS: (crash.killedAt - window.startAt) / 1000,
    listeningAtS: (crash.listeningAt - window.startAt) / 1000,
    before: phase(reports, log, window.startAt, crash.killedAt),
    during: phase(reports, log, crash.killedAt, crash.listeningAt),
    after: phase(reports, log, crash.listeningAt, window.endAt),
    afterSettled: phase(reports, log, crash.listeningAt + SETTLE_MS, window.endAt),
    firstPageAfterKillMs: firstAfter(crash.killedAt),
    firstBrokerPageAfterRestartMs: firstAfter(crash.listeningAt, "broker"),
    perSecond,
  };
}

const fmt = (p: Phase): string =>
  `${p.pagesPerSecond.toFixed(1)} pages/s (${p.pages} pages, ${p.overlaps} overlaps, ${p.rateLimited} × 429)`;

function ratio(p: Phase, base: Phase): string {
  return base.pagesPerSecond > 0 ? `${(p.pagesPerSecond / base.pagesPerSecond).toFixed(2)}×` : "n/a";
}

export function formatOutage(t: OutageTimeline, who = "ProxyBroker"): string {
  const ms = (v: number | undefined): string => (v === undefined ? "none" : `${v} ms`);
  return [
    `${who} with the broker SIGKILLed at ${t.killedAtS.toFixed(1)} s and listening again at ${t.listeningAtS.toFixed(1)} s:`,
    `  before ${fmt(t.before)}`,
    `  during ${fmt(t.during)}; first page after the kill: ${ms(t.firstPageAfterKillMs)}`,
    `  after  ${fmt(t.after)}; first page through a broker lease after the restart: ${ms(t.firstBrokerPageAfterRestartMs)}`,
    `  from 2 s after the restart: ${fmt(t.afterSettled)}`,
    `  ratios to before: during ${ratio(t.during, t.before)}, from 2 s after the restart ${ratio(t.afterSettled, t.before)}`,
    `  pages per second: ${t.perSecond.join(" ")}`,
  ].join("\n");
}
