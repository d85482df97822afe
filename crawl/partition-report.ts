/**
 * The partition mode's timeline as text (printed after the per-site tables) and the gate's
 * reasons: a second without a page after the first page of the window, and (with a bound) the
 * fleet's pages/s from 8 s after the cut too far below its pages/s before the cut.
 */
import { SETTLE_MS } from "./partition.js";
import type { Incidents, PartitionTimeline, Speed } from "./partition.js";

/** The seconds without a page after the first page of the window: what the gate counts. */
export function emptySecondsAfterFirstPage(t: PartitionTimeline): readonly number[] {
  const first = t.firstPageSecond;
  return first === undefined ? [] : t.emptySeconds.filter((i) => i > first);
}

function ratioText(r: number | undefined): string {
  return r === undefined ? "n/a" : `${r.toFixed(2)}×`;
}

/** Why the partition run fails the gate (empty: it passes); a bound of 0 is not checked. */
export function partitionGateFailures(t: PartitionTimeline, minRatio: number, minEfficiency = 0): string[] {
  const out: string[] = [];
  const empty = emptySecondsAfterFirstPage(t);
  if (empty.length > 0) out.push(`${empty.length} seconds without a page after the first page (at ${empty.join(", ")} s)`);
  if (minRatio > 0 && (t.ratio === undefined || t.ratio < minRatio))
    out.push(`pages/s from ${SETTLE_MS / 1000} s after the partition ${ratioText(t.ratio)} of before it (at least ${minRatio}×)`);
  if (minEfficiency > 0 && t.efficiencyAfterCut < minEfficiency)
    out.push(`efficiency after the partition ${t.efficiencyAfterCut.toFixed(2)} (at least ${minEfficiency})`);
  return out;
}

/** Second by second, with `|` before the second the cut falls in. */
function seconds(counts: readonly number[], cutAtS: number): string {
  const cut = Math.floor(cutAtS);
  return counts.map((n, i) => (i === cut ? `| ${n}` : String(n))).join(" ");
}

function incidents(i: Incidents): string {
  return `${i.rateLimited} × 429, ${i.bans} bans, ${i.overlaps} overlaps`;
}

function speed(s: Speed, worker: string): string {
  return `${s.pagesPerSecond.toFixed(1)} pages/s (${s.pages} pages: ${worker} ${s.cutWorkerPages}, the others ${s.otherPages})`;
}

export function formatPartition(t: PartitionTimeline, who = "ProxyBroker"): string {
  const empty = t.emptySeconds;
  const afterFirst = emptySecondsAfterFirstPage(t).length;
  const emptyLine =
    empty.length === 0 ? "none" : `${empty.length} (at ${empty.join(", ")} s; ${afterFirst} of them after the first page of the window)`;
  const settled = t.settled === undefined ? "n/a (the window ends first)" : speed(t.settled, t.worker);
  const fallback = t.firstFallbackPageMs === undefined ? "none" : `${t.firstFallbackPageMs} ms`;
  const label = `pages per second, ${t.worker}:`;
  const pad = label.length;
  return [
    `${who} with ${t.worker} cut off the broker at ${t.cutAtS.toFixed(1)} s of ${t.windowS.toFixed(0)} s (a silent partition until the end; | = the cut):`,
    `  ${"pages per second, fleet:".padEnd(pad)} ${seconds(t.perSecond, t.cutAtS)}`,
    `  ${label} ${seconds(t.cutWorkerPerSecond, t.cutAtS)}`,
    `  seconds without a page: ${emptyLine}`,
    `  whole window: ${incidents(t.window)}; after the cut: ${incidents(t.afterCut)}`,
    `  before the cut: ${speed(t.before, t.worker)}`,
    `  from ${SETTLE_MS / 1000} s after the cut: ${settled}; ratio to before ${ratioText(t.ratio)}`,
    `  after the cut: ${t.pagesPerMinuteAfterCut.toFixed(1)} pages/min, efficiency ${t.efficiencyAfterCut.toFixed(2)}`,
    `  first page of ${t.worker} through its fallback pool after the cut: ${fallback}`,
  ].join("\n");
}
