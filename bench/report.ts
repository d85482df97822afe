import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { ProfileSummary } from "./profile-summary.js";
import { NOISY_CORES } from "./result.js";
import type { ScenarioResult } from "./result.js";
import type { Ratio, Target } from "./targets.js";

const f = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : "–");

interface Column {
  readonly head: string;
  readonly cell: (r: ScenarioResult) => string;
  readonly left?: boolean;
}

const COLUMNS: readonly Column[] = [
  { head: "scenario", cell: (r) => r.label, left: true },
  { head: "P", cell: (r) => String(r.proxies) },
  { head: "W", cell: (r) => String(r.workers) },
  { head: "D", cell: (r) => String(r.domains) },
  { head: "cycles/s", cell: (r) => f(r.cyclesPerSec, 0) },
  { head: "failed acq", cell: (r) => String(r.failedAcquires) },
  { head: "p50 ms", cell: (r) => f(r.p50Ms, 2) },
  { head: "p99 ms", cell: (r) => f(r.p99Ms, 2) },
  { head: "redis cmds/cyc", cell: (r) => f(r.redisCallsPerCycle, 2) },
  { head: "evalsha/cyc", cell: (r) => f(r.evalshaPerCycle, 2) },
  { head: "redis CPU µs/cyc", cell: (r) => f(r.redisCpuUsPerCycle, 1) },
  { head: "busiest redis", cell: (r) => f(r.busiestRedisShare, 2) },
  { head: "broker CPU µs/cyc", cell: (r) => f(r.brokerCpuUsPerCycle, 1) },
  { head: "client CPU µs/cyc", cell: (r) => f(r.clientCpuUsPerCycle, 1) },
  { head: "others' cores", cell: (r) => f(r.othersCores, 2) },
  { head: "slices", cell: (r) => `${r.slicesUsed}/${r.slices.length}` },
];

/** The results as one aligned text table. */
export function resultsTable(results: readonly ScenarioResult[]): string {
  const rows = [COLUMNS.map((c) => c.head), ...results.map((r) => COLUMNS.map((c) => c.cell(r)))];
  const widths = COLUMNS.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length)));
  const line = (row: readonly string[]) =>
    row.map((cell, i) => (COLUMNS[i]?.left === true ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join("  ");
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(rows[0] ?? []), rule, ...rows.slice(1).map(line)].join("\n");
}

/** Redis commands per cycle, by command, one line per scenario. */
export function commandLines(results: readonly ScenarioResult[]): string {
  return results
    .map((r) => {
      const parts = Object.entries(r.commandsPerCycle).map(([name, c]) => `${name} ${f(c.calls, 2)}×${f(c.usPerCall, 1)}µs`);
      return `  ${r.label}: ${parts.join(", ")}`;
    })
    .join("\n");
}

/** A warning naming the rows that shared the machine with busy neighbours, or "" when none did. */
export function noiseLine(results: readonly ScenarioResult[]): string {
  const noisy = results.filter((r) => r.othersCores >= NOISY_CORES);
  if (noisy.length === 0) return "";
  const names = noisy.map((r) => `${r.label.replace(/\s+/g, " ")} (${f(r.othersCores, 2)})`).join("; ");
  return `Warning: other processes used ≥ ${NOISY_CORES} cores even in the quieter slices of these rows; their cycles/s and latencies are depressed: ${names}.`;
}

/** A line naming rows whose loops saw lost leases or denied releases, or "" when none did. */
export function errorLine(results: readonly ScenarioResult[]): string {
  const bad = results.filter((r) => r.errors > 0);
  if (bad.length === 0) return "";
  return `Errors (lost leases, denied releases): ${bad.map((r) => `${r.label.replace(/\s+/g, " ")}: ${r.errors}`).join("; ")}.`;
}

export function ratioLines(list: readonly Ratio[]): string {
  return list.map((r) => `  ${r.text}: cycles/s ${f(r.cyclesPerSec, 2)}×, Redis CPU/cycle ${f(r.redisCpuPerCycle, 2)}×`).join("\n");
}

export function targetLines(list: readonly Target[]): string {
  return list.map((t) => `  [${t.met === undefined ? "n/a " : t.met ? "MET " : "MISS"}] ${t.text}: ${t.actual}`).join("\n");
}

export function profileLines(p: ProfileSummary): string {
  const entries = (list: ProfileSummary["functions"]) =>
    list.map((e) => `    ${f(e.percent, 1).padStart(5)}%  ${f(e.selfMs, 0).padStart(6)} ms  ${e.name}`).join("\n");
  return [
    `  ${p.file}`,
    `  ${p.samples} samples ${p.windowed ? "inside the measurement window" : "(whole process: the window did not line up)"}`,
    "  self time by package / folder:",
    entries(p.packages),
    "  top self-time functions:",
    entries(p.functions),
  ].join("\n");
}

/** JSON cannot hold NaN: write null instead. */
function finite(_key: string, value: unknown): unknown {
  return typeof value === "number" && !Number.isFinite(value) ? null : value;
}

/** Write the run as JSON (the folder is created when missing). */
export async function writeJson(path: string, data: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(data, finite, 2)}\n`);
}
