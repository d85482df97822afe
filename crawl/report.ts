/**
 * One row per strategy, from the sites' request log (429s, bans, overlaps) and the workers'
 * reports (pages taken, captcha pages taken for content), one row per site for ProxyBroker, and
 * the tables that print them.
 */
import { countOverlaps } from "./sites.js";
import type { RequestLogEntry, Site, SitesCounters } from "./sites.js";
import type { FetchReport } from "./workers/common.js";

export interface RowInput {
  readonly strategy: string;
  /** What the table shows for the strategy (default: its name), e.g. the worker mix. */
  readonly label?: string;
  readonly reports: readonly FetchReport[];
  readonly log: readonly RequestLogEntry[];
  readonly counters: SitesCounters;
  /** The measured window, epoch ms. */
  readonly startAt: number;
  readonly endAt: number;
  readonly proxies: number;
  /** Each site's own rule (its real minimum interval). */
  readonly siteIntervalsMs: readonly number[];
  readonly workerFailures: number;
}

export interface Row {
  readonly strategy: string;
  readonly label: string;
  readonly pages: number;
  readonly pagesPerMinute: number;
  readonly requests: number;
  readonly rateLimited: number;
  readonly bans: number;
  readonly undetectedCaptcha: number;
  readonly overlaps: number;
  readonly efficiency: number;
  readonly workerFailures: number;
}

/** Σ over sites of N × 60 / interval: every (proxy, site) pair used once per site interval. */
export function theoreticalMaxPerMinute(proxies: number, siteIntervalsMs: readonly number[]): number {
  return siteIntervalsMs.reduce((sum, ms) => sum + (proxies * 60_000) / ms, 0);
}

/** Distinct pages with real content accepted by `endAt`. */
export function pagesTaken(reports: readonly FetchReport[], endAt: number): number {
  return new Set(reports.filter((r) => r.t <= endAt && r.accepted && r.real).map((r) => r.url)).size;
}

export function computeRow(input: RowInput): Row {
  const inWindow = input.reports.filter((r) => r.t <= input.endAt);
  const pages = pagesTaken(inWindow, input.endAt);
  const minutes = (input.endAt - input.startAt) / 60_000;
  const pagesPerMinute = pages / minutes;
  return {
    strategy: input.strategy,
    label: input.label ?? input.strategy,
    pages,
    pagesPerMinute,
    requests: input.counters.requests,
    rateLimited: input.counters.rateLimited,
    bans: input.counters.bans,
    undetectedCaptcha: inWindow.filter((r) => r.accepted && !r.real).length,
    overlaps: countOverlaps(input.log),
    efficiency: pagesPerMinute / theoreticalMaxPerMinute(input.proxies, input.siteIntervalsMs),
    workerFailures: input.workerFailures,
  };
}

/** One site's figures in a run. */
export interface SiteRow {
  readonly host: string;
  /** The broker's policy interval; undefined = no policy (the site's rule is unknown to it). */
  readonly policyMs: number | undefined;
  /** The site's real rule. */
  readonly ruleMs: number;
  readonly requests: number;
  readonly rateLimited: number;
  readonly bans: number;
  readonly pages: number;
  readonly pagesPerMinute: number;
  /** pages/min ÷ N × 60 / rule. */
  readonly efficiency: number;
  /** The most release-anchored pacing allows: rule / (rule + mean request time at the site). */
  readonly releaseBound: number;
  /** Mean time a request spent at the site, ms. */
  readonly requestMs: number;
  /** Seconds into the window of the last 429 (undefined: none). */
  readonly last429AtS: number | undefined;
  /** Pages/min after the last 429 (all the window when none). */
  readonly pagesPerMinuteAfter: number;
}

/** Per-site figures from the log and the reports of one run. */
export function computeSiteRows(input: {
  readonly sites: readonly Site[];
  readonly policyMs: (site: Site) => number | undefined;
  readonly counters: (site: Site) => SitesCounters;
  readonly reports: readonly FetchReport[];
  readonly log: readonly RequestLogEntry[];
  readonly startAt: number;
  readonly endAt: number;
  readonly proxies: number;
}): SiteRow[] {
  const minutes = (input.endAt - input.startAt) / 60_000;
  return input.sites.map((site) => {
    const reports = input.reports.filter((r) => r.url.startsWith(`${site.origin}/`) && r.t <= input.endAt);
    const entries = input.log.filter((e) => e.site === site.host && e.start <= input.endAt);
    const pages = pagesTaken(reports, input.endAt);
    const last429 = Math.max(0, ...entries.filter((e) => e.answer === "429").map((e) => e.start));
    const after = last429 > 0 ? reports.filter((r) => r.t > last429) : reports;
    const afterMinutes = last429 > 0 ? (input.endAt - last429) / 60_000 : minutes;
    const served = entries.filter((e) => e.answer === "page");
    const requestMs = served.length === 0 ? 0 : served.reduce((s, e) => s + (e.end - e.start), 0) / served.length;
    const counters = input.counters(site);
    const ruleMs = site.rules.minIntervalMs;
    const pagesPerMinute = pages / minutes;
    return {
      host: site.host,
      policyMs: input.policyMs(site),
      ruleMs,
      requests: counters.requests,
      rateLimited: counters.rateLimited,
      bans: counters.bans,
      pages,
      pagesPerMinute,
      efficiency: pagesPerMinute / ((input.proxies * 60_000) / ruleMs),
      releaseBound: ruleMs / (ruleMs + requestMs),
      requestMs,
      last429AtS: last429 > 0 ? (last429 - input.startAt) / 1000 : undefined,
      pagesPerMinuteAfter: afterMinutes > 0 ? pagesTaken(after, input.endAt) / afterMinutes : 0,
    };
  });
}

/** A table's columns: heading, and the cell of a row. */
export type Columns<T> = ReadonlyArray<readonly [string, (r: T) => string]>;

const COLUMNS: Columns<Row> = [
  ["strategy", (r) => r.label],
  ["pages", (r) => String(r.pages)],
  ["pages/min", (r) => r.pagesPerMinute.toFixed(1)],
  ["requests", (r) => String(r.requests)],
  ["429s", (r) => String(r.rateLimited)],
  ["bans", (r) => String(r.bans)],
  ["captcha taken", (r) => String(r.undetectedCaptcha)],
  ["overlaps", (r) => String(r.overlaps)],
  ["efficiency", (r) => r.efficiency.toFixed(2)],
  ["worker errors", (r) => String(r.workerFailures)],
];

const SITE_COLUMNS: Columns<SiteRow> = [
  ["site", (r) => r.host],
  ["policy", (r) => (r.policyMs === undefined ? "none" : `${r.policyMs} ms`)],
  ["site's rule", (r) => `${r.ruleMs} ms`],
  ["requests", (r) => String(r.requests)],
  ["429s", (r) => String(r.rateLimited)],
  ["last 429 at", (r) => (r.last429AtS === undefined ? "–" : `${r.last429AtS.toFixed(1)} s`)],
  ["bans", (r) => String(r.bans)],
  ["pages/min", (r) => r.pagesPerMinute.toFixed(1)],
  ["after last 429", (r) => r.pagesPerMinuteAfter.toFixed(1)],
  ["efficiency", (r) => r.efficiency.toFixed(2)],
  ["release bound", (r) => `${r.releaseBound.toFixed(3)} (${r.requestMs.toFixed(1)} ms)`],
];

/** `rows` as a Markdown table (first column left-aligned, the others right-aligned). */
export function table<T>(columns: Columns<T>, rows: readonly T[]): string {
  const cells = rows.map((r) => columns.map(([, f]) => f(r)));
  const widths = columns.map(([h], i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? "").length)));
  const line = (values: readonly string[]): string =>
    `| ${values.map((v, i) => (i === 0 ? v.padEnd(widths[i] ?? 0) : v.padStart(widths[i] ?? 0))).join(" | ")} |`;
  return [
    line(columns.map(([h]) => h)),
    `|${widths.map((w, i) => (i === 0 ? `:${"-".repeat(w + 1)}` : `${"-".repeat(w + 1)}:`)).join("|")}|`,
    ...cells.map(line),
  ].join("\n");
}

/** The strategies as a Markdown table. */
export function formatTable(rows: readonly Row[]): string {
  return table(COLUMNS, rows);
}

/** ProxyBroker's sites as a Markdown table. */
export function formatSiteTable(rows: readonly SiteRow[]): string {
  return table(SITE_COLUMNS, rows);
}

/** Why the ProxyBroker run fails the gate (empty: it passes). */
export function gateFailures(row: Row, sites: readonly SiteRow[], maxFree429: number): string[] {
  const out: string[] = [];
  if (row.overlaps > 0) out.push(`${row.overlaps} overlaps`);
  if (row.bans > 0) out.push(`${row.bans} bans`);
  if (row.undetectedCaptcha > 0) out.push(`${row.undetectedCaptcha} captcha pages taken for content`);
  if (row.workerFailures > 0) out.push(`${row.workerFailures} workers failed`);
  for (const s of sites) {
    if (s.policyMs !== undefined && s.rateLimited > 0) out.push(`${s.rateLimited} × 429 on ${s.host} (it has a policy)`);
    if (s.policyMs === undefined && s.rateLimited > maxFree429)
      out.push(`${s.rateLimited} × 429 on ${s.host} (no policy; at most ${maxFree429})`);
    if (s.pages === 0) out.push(`no page of ${s.host}`);
  }
  return out;
}
