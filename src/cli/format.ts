/** Output of the `proxybroker` commands: tables for people, JSON for scripts, durations. */
import { cliIO } from "./io.js";

/** A plain text table: a header row, then the rows, columns padded (numbers right-aligned). */
export function table(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === "number"));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(cells[0]!), line(widths.map((w) => "-".repeat(w))), ...cells.slice(1).map(line)].join("\n");
}

/** A duration as people write it: 500ms, 30s, 10m, 2h, 1d, or plain milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (m === null) throw new RangeError(`"${text}" is not a duration (like 500ms, 30s, 10m, 2h)`);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] ?? "ms"] ?? 1;
  return Math.round(Number(m[1]) * unit);
}

/** Milliseconds as a short duration. */
export function formatMs(ms: number): string {
  if (ms === 0) return "0";
  if (ms < 1_000) return `${ms}ms`;
  if (ms < 60_000) return `${+(ms / 1_000).toFixed(1)}s`;
  if (ms < 3_600_000) return `${+(ms / 60_000).toFixed(1)}m`;
  return `${+(ms / 3_600_000).toFixed(1)}h`;
}

/**
 * An event's detail for people: the until (epoch ms) of a ban, a cool-down or a quarantine as
 * "for 1.5m (until 12:00:30Z)"; anything else as it is.
 */
export function eventDetail(kind: string, detail: string, at: number): string {
  if (!["BAN", "COOL_DOWN", "QUARANTINE"].includes(kind) || !/^\d{10,}$/.test(detail)) return detail;
  const until = Number(detail);
  return `for ${formatMs(Math.max(0, until - at))} (until ${new Date(until).toISOString().slice(11, 19)}Z)`;
}

/** Write a JSON value (bigints as strings) as one line to stdout. */
export function printJson(value: unknown): void {
  cliIO().out.write(`${JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}\n`);
}

/** Write a line to stdout. */
export function print(text: string): void {
  cliIO().out.write(`${text}\n`);
}
