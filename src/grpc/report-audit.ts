/**
 * The audit of reported outcomes (ReportOutcomes, docs/spec.md §8): what a caller's reports did,
 * one line of the audit trail per (caller, pool) at most every `everyMs`. The first call's line
 * is written at once; what later calls did within that time is added up and written when it has
 * passed. A flood of small calls thus writes a bounded trail, and still every applied report is
 * counted in a line.
 */
import type { OutcomeKindName } from "@proxybroker/sdk/model";
import type { AuditRecord } from "./audit.js";

/** What one ReportOutcomes call did. */
export interface ReportTally {
  readonly workerId: string;
  readonly applied: number;
  /** Of `applied`, those under the worker's fallback claim (the others: on pairs it held). */
  readonly claimed: number;
  readonly notHeld: number;
  /** The applied outcomes per kind (those that restrict a pair at least). */
  readonly kinds: Readonly<Partial<Record<OutcomeKindName, number>>>;
}

export interface ReportAuditOptions {
  readonly clock: () => number;
  /** At most one line per (caller, pool) this often. */
  readonly everyMs: number;
  /** The caps a report's cool-down and ban are cut to (for the line). */
  readonly maxCoolDownMs: number;
  readonly maxBanMs: number;
  readonly write: (rec: AuditRecord) => Promise<void>;
}

/** Worker ids named in one line at most (the others are counted). */
const MAX_NAMED = 5;
/** Callers kept at once before the idle ones are dropped. */
const SWEEP_AT = 1_000;

interface Entry {
  readonly actor: string;
  readonly pool: string;
  lastAt: number;
  pending: Pending | undefined;
  timer: NodeJS.Timeout | undefined;
}

interface Pending {
  applied: number;
  claimed: number;
  notHeld: number;
  calls: number;
  readonly kinds: Map<string, number>;
  readonly workers: Set<string>;
}

export class ReportAudit {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly opts: ReportAuditOptions) {}

  /** Count what a call of `actor` (its token's name, "" = none) in `pool` did. */
  note(actor: string, pool: string, tally: ReportTally): void {
    if (tally.applied === 0 && tally.notHeld === 0) return;
    const now = this.opts.clock();
    if (this.entries.size >= SWEEP_AT) this.sweep(now);
    const key = `${actor}\n${pool}`;
    let e = this.entries.get(key);
    if (e === undefined) {
      e = { actor, pool, lastAt: Number.NEGATIVE_INFINITY, pending: undefined, timer: undefined };
      this.entries.set(key, e);
    }
    if (e.pending === undefined) e.pending = { applied: 0, claimed: 0, notHeld: 0, calls: 0, kinds: new Map(), workers: new Set() };
    const p = e.pending;
    p.applied += tally.applied;
    p.claimed += tally.claimed;
    p.notHeld += tally.notHeld;
    p.calls += 1;
    p.workers.add(tally.workerId);
    for (const [kind, n] of Object.entries(tally.kinds)) p.kinds.set(kind, (p.kinds.get(kind) ?? 0) + (n ?? 0));
    if (now - e.lastAt >= this.opts.everyMs) this.flush(e, now);
    else if (e.timer === undefined) {
      const entry = e;
      entry.timer = setTimeout(() => this.flush(entry, this.opts.clock()), entry.lastAt + this.opts.everyMs - now);
      entry.timer.unref();
    }
  }

  /** Write every line still pending (at shutdown, in tests). */
  flushAll(): void {
    const now = this.opts.clock();
    for (const e of this.entries.values()) this.flush(e, now);
  }

  private flush(e: Entry, now: number): void {
    if (e.timer !== undefined) clearTimeout(e.timer);
    e.timer = undefined;
    const p = e.pending;
    if (p === undefined) return;
    e.pending = undefined;
    e.lastAt = now;
    void this.opts.write({ actor: e.actor, method: "ReportOutcomes", pool: e.pool, detail: lineOf(p, this.opts) });
  }

  /** Drop the callers with nothing pending whose last line is older than `everyMs`. */
  private sweep(now: number): void {
    for (const [key, e] of this.entries) if (e.pending === undefined && now - e.lastAt >= this.opts.everyMs) this.entries.delete(key);
  }
}

function lineOf(p: Pending, caps: Pick<ReportAuditOptions, "maxCoolDownMs" | "maxBanMs">): string {
  const named = [...p.workers].slice(0, MAX_NAMED).join(", ");
  const more = p.workers.size > MAX_NAMED ? ` and ${p.workers.size - MAX_NAMED} more` : "";
  const kinds = [...p.kinds].filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`);
  return (
    `${p.calls} call(s) from worker(s) ${named}${more}: applied ${p.applied}` +
    (kinds.length > 0 ? ` (${kinds.join(", ")})` : "") +
    `, ${p.claimed} of them under a fallback claim; ${p.notHeld} on pairs not held, not applied; ` +
    `cool-downs cut to ${caps.maxCoolDownMs} ms, bans to ${caps.maxBanMs} ms`
  );
}
