/**
 * Pieces of the chaos summary's lines shared by its parts (chaos/report.ts,
 * chaos/cross-site-report.ts): times, counts by key, and one lease on one line.
 */
import type { LeaseRecord } from "./records.js";

/** Wall-clock time of day, UTC, to the millisecond. */
export function iso(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

export function count<T>(items: readonly T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of items) m.set(key(i), (m.get(key(i)) ?? 0) + 1);
  return m;
}

/** "a 2, b 1" in key order, or "none". */
export function list(m: ReadonlyMap<string, number> | Readonly<Record<string, number>>): string {
  const entries = m instanceof Map ? [...m] : Object.entries(m);
  return entries.length === 0
    ? "none"
    : entries
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k} ${v}`)
        .join(", ");
}

/** A lease: worker, API, source, id, token, grant and how it ended. */
export function leaseLine(l: LeaseRecord): string {
  const end =
    l.end === undefined
      ? "no end (worker killed)"
      : `used until ${iso(l.end.at)}, ${l.end.how}${l.end.detail !== undefined ? ` (${l.end.detail})` : ""}${l.end.finalLease !== l.lease ? `, handed over → ${l.end.finalSource} token ${l.end.finalToken}` : ""}`;
  return `${l.worker}#${l.gen} ${l.api} ${l.source} lease ${l.lease.slice(0, 12)} token ${l.token} granted ${iso(l.grantedAt)}, ${end}`;
}
