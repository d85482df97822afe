/**
 * One row per strategy, from the sites' request log (429s, bans, overlaps) and the workers'
 * reports (pages taken, captcha pages taken for content), and the table that prints them.
 */
import { countOverlaps } from "./sites.js";
import type { RequestLogEntry, SitesCounters } from "./sites.js";
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
  readonly sites: number;
  readonly minIntervalMs: number;
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

/** N × S × 60 / min_interval: every (proxy, site) pair used once per min_interval. */
export function theoreticalMaxPerMinute(proxies: number, sites: number, minIntervalMs: number): number {
  return (proxies * sites * 60_000) / minIntervalMs;
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
    efficiency: pagesPerMinute / theoreticalMaxPerMinute(input.proxies, input.sites, input.minIntervalMs),
    workerFailures: input.workerFailures,
  };
}

const COLUMNS: ReadonlyArray<readonly [string, (r: Row) => string]> = [
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

/** A Markdown table. */
export function formatTable(rows: readonly Row[]): string {
  const cells = rows.map((r) => COLUMNS.map(([, f]) => f(r)));
  const widths = COLUMNS.map(([h], i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? "").length)));
  const line = (values: readonly string[]): string => `| ${values.map((v, i) => (i === 0 ? v.padEnd(widths[i] ?? 0) : v.padStart(widths[i] ?? 0))).join(" | ")} |`;
  return [line(COLUMNS.map(([h]) => h)), `|${widths.map((w, i) => (i === 0 ? `:${"-".repeat(w + 1)}` : `${"-".repeat(w + 1)}:`)).join("|")}|`, ...cells.map(line)].join("\n");
}

/** Why the ProxyBroker row fails the gate (empty: it passes). */
export function gateFailures(row: Row): string[] {
  const out: string[] = [];
  if (row.overlaps > 0) out.push(`${row.overlaps} overlaps`);
  if (row.bans > 0) out.push(`${row.bans} bans`);
  if (row.undetectedCaptcha > 0) out.push(`${row.undetectedCaptcha} captcha pages taken for content`);
  if (row.workerFailures > 0) out.push(`${row.workerFailures} workers failed`);
  return out;
}
