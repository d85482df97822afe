/**
 * The isolation group's figures per strategy (CRAWL_ISOLATION): a table of the check of the
 * sites' logs (isolation-check.ts), the first incidents of each strategy with IP, sites and times,
 * the gate's reasons, and the JSON record written with CRAWL_LOG_DIR.
 */
import type { AffinityViolation, CrossSiteOverlap, IsolationCheck, LoggedRequest } from "./isolation-check.js";
import type { IsolationOptions } from "./isolation-options.js";
import { table } from "./report.js";
import type { Columns } from "./report.js";

/** One strategy's check. */
export interface IsolationRow {
  readonly strategy: string;
  readonly label: string;
  /** Its policies named the group (ProxyBroker's strategies); the baselines ignore it. */
  readonly enforced: boolean;
  /** The measured window's start (epoch ms): incidents are printed as seconds into it. */
  readonly startAt: number;
  readonly check: IsolationCheck;
}

/** Incidents printed per strategy and kind; the JSON record has them all. */
const SHOWN = 5;

function columns(affinityMs: number): Columns<IsolationRow> {
  return [
    ["strategy", (r) => r.label],
    ["group in policies", (r) => (r.enforced ? "yes" : "no (baseline)")],
    ["IP moves between sites", (r) => String(r.check.moves)],
    ["cross-site overlaps", (r) => String(r.check.crossSiteOverlaps.length)],
    ["affinity violations", (r) => (affinityMs > 0 ? String(r.check.affinityViolations.length) : "–")],
  ];
}

function at(ms: number, startAt: number): string {
  return `${((ms - startAt) / 1000).toFixed(3)} s`;
}

function request(r: LoggedRequest, startAt: number): string {
  return `${r.site} [${at(r.start, startAt)} – ${at(r.end, startAt)}]`;
}

function overlapLine(o: CrossSiteOverlap, startAt: number): string {
  return `cross-site overlap: ${o.ip} on ${request(o.first, startAt)} and ${request(o.second, startAt)}`;
}

function violationLine(v: AffinityViolation, startAt: number): string {
  return `affinity violation: ${v.ip} left ${v.from} at ${at(v.fromEnd, startAt)}, on ${v.to} at ${at(v.toStart, startAt)} (after ${v.gapMs} ms)`;
}

function incidents<T>(label: string, items: readonly T[], line: (item: T) => string): string[] {
  const shown = items.slice(0, SHOWN).map((item) => `${label}: ${line(item)}`);
  return items.length > SHOWN ? [...shown, `${label}: … and ${items.length - SHOWN} more`] : shown;
}

/** The table, and under it the first incidents of the strategies whose policies named the group. */
export function formatIsolation(iso: IsolationOptions, groupSites: readonly string[], rows: readonly IsolationRow[]): string {
  const window = iso.affinityMs > 0 ? `affinity window ${iso.affinityMs} ms` : "no affinity window";
  const lines = rows
    .filter((r) => r.enforced)
    .flatMap((r) => [
      ...incidents(r.label, r.check.crossSiteOverlaps, (o) => overlapLine(o, r.startAt)),
      ...incidents(r.label, r.check.affinityViolations, (v) => violationLine(v, r.startAt)),
    ]);
  return [
    `Isolation group ${iso.group} (${groupSites.join(", ")}), ${window}, from the sites' logs:`,
    "",
    table(columns(iso.affinityMs), rows),
    ...(lines.length > 0 ? ["", ...lines] : []),
  ].join("\n");
}

/** Why a strategy whose policies named the group fails the gate (empty: it passes, or a baseline). */
export function isolationGateFailures(row: IsolationRow): string[] {
  if (!row.enforced) return [];
  const out: string[] = [];
  const { crossSiteOverlaps, affinityViolations } = row.check;
  if (crossSiteOverlaps.length > 0) out.push(`${crossSiteOverlaps.length} cross-site overlaps in isolation group`);
  if (affinityViolations.length > 0) out.push(`${affinityViolations.length} affinity window violations`);
  return out;
}

/** What `<strategy>.isolation.json` holds: the settings, the counts and every incident. */
export function isolationRecord(iso: IsolationOptions, groupSites: readonly string[], row: IsolationRow): Record<string, unknown> {
  return {
    strategy: row.strategy,
    group: iso.group,
    affinityWindowMs: iso.affinityMs,
    sites: groupSites,
    enforced: row.enforced,
    startAt: row.startAt,
    moves: row.check.moves,
    crossSiteOverlaps: row.check.crossSiteOverlaps.length,
    affinityViolations: row.check.affinityViolations.length,
    crossSiteOverlapPairs: row.check.crossSiteOverlaps,
    affinityViolationMoves: row.check.affinityViolations,
  };
}
