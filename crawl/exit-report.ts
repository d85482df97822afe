/**
 * The provider scenario's view per exit IP: what the sites counted for each client address (the
 * exits the sessions share) — requests, 429s, arrivals too fast, overlaps, bans — and why it fails
 * the gate. Real sites key their limits on the address; so does this view, whatever proxy URL a
 * strategy thought it used.
 */
import { table } from "./report.js";
import type { Columns } from "./report.js";
import { countOverlaps } from "./sites.js";
import type { Sites } from "./sites.js";

export interface ExitRow {
  readonly exit: string;
  /** Sessions (proxy URLs) of the pool leaving from it. */
  readonly sessions: number;
  readonly requests: number;
  readonly rateLimited: number;
  readonly tooFast: number;
  readonly overlaps: number;
  readonly bans: number;
}

export interface ExitRowsInput {
  readonly sites: Sites;
  /** The sites counted (their hosts as logged). */
  readonly hosts: readonly string[];
  /** The exits, in order; an address the sites saw besides them gets a row too. */
  readonly exits: readonly string[];
  readonly sessionsOf: (exit: string) => number;
}

export function computeExitRows(input: ExitRowsInput): ExitRow[] {
  const hosts = new Set(input.hosts);
  const log = input.sites.log.filter((e) => hosts.has(e.site));
  const seen = new Set(log.map((e) => e.ip));
  const addresses = [...input.exits, ...[...seen].filter((ip) => !input.exits.includes(ip)).sort()];
  return addresses.map((exit) => {
    const c = input.sites.addressCounters(exit, input.hosts);
    return {
      exit,
      sessions: input.sessionsOf(exit),
      requests: c.requests,
      rateLimited: c.rateLimited,
      tooFast: c.tooFast,
      overlaps: countOverlaps(log.filter((e) => e.ip === exit)),
      bans: c.bans,
    };
  });
}

/** Every exit together. */
export function exitTotals(rows: readonly ExitRow[]): ExitRow {
  const sum = (f: (r: ExitRow) => number): number => rows.reduce((s, r) => s + f(r), 0);
  return {
    exit: "all",
    sessions: sum((r) => r.sessions),
    requests: sum((r) => r.requests),
    rateLimited: sum((r) => r.rateLimited),
    tooFast: sum((r) => r.tooFast),
    overlaps: sum((r) => r.overlaps),
    bans: sum((r) => r.bans),
  };
}

const EXIT_COLUMNS: Columns<ExitRow> = [
  ["exit", (r) => r.exit],
  ["sessions", (r) => String(r.sessions)],
  ["requests", (r) => String(r.requests)],
  ["429s", (r) => String(r.rateLimited)],
  ["too fast", (r) => String(r.tooFast)],
  ["overlaps", (r) => String(r.overlaps)],
  ["bans", (r) => String(r.bans)],
];

/** The exits and their total as a Markdown table. */
export function formatExitTable(rows: readonly ExitRow[]): string {
  return table(EXIT_COLUMNS, [...rows, exitTotals(rows)]);
}

/** Why a strategy fails the provider scenario's gate: a violation at any exit, or too low an efficiency. */
export function exitGateFailures(rows: readonly ExitRow[], efficiency: number, minEfficiency: number): string[] {
  const out: string[] = [];
  for (const r of rows) {
    const what = [
      r.rateLimited > 0 ? `${r.rateLimited} × 429` : "",
      r.tooFast > 0 ? `${r.tooFast} too fast` : "",
      r.overlaps > 0 ? `${r.overlaps} overlaps` : "",
      r.bans > 0 ? `${r.bans} bans` : "",
    ].filter((w) => w !== "");
    if (what.length > 0) out.push(`exit ${r.exit}: ${what.join(", ")}`);
  }
  if (efficiency < minEfficiency) out.push(`efficiency ${efficiency.toFixed(2)} against the exits (at least ${minEfficiency})`);
  return out;
}
