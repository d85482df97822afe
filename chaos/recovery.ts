/**
 * How the fleet came back from each Redis failover of a chaos run, from what was recorded: the
 * fault's moments (kill, promotion), the brokers' hold lines ("grants held until …"), and the
 * workers' grants. Pure functions; chaos/report.ts prints them and fails the run when the fleet
 * was not back at full speed within 2 s of the end of the hold (or of the promotion, with none).
 */
import type { FaultEvent } from "./faults.js";
import type { LeaseRecord } from "./records.js";

/** A broker's log line saying it holds grants in a pool after a loss. */
export interface HoldLine {
  readonly pool: string;
  /** When it was logged, and when the hold ends (epoch ms). */
  readonly at: number;
  readonly until: number;
}

/** The hold lines of a broker's output (JSON lines with `time` and `msg`). */
export function holdLines(output: string): HoldLine[] {
  const out: HoldLine[] = [];
  for (const line of output.split("\n")) {
    if (!line.includes("grants held until")) continue;
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed !== "object" || parsed === null) continue;
      const { time, msg } = parsed as { time?: unknown; msg?: unknown };
      if (typeof time !== "string" || typeof msg !== "string") continue;
      const m = /pool (\S+) .*grants held until (\S+)/.exec(msg);
      if (m === null) continue;
      out.push({ pool: m[1] ?? "", at: Date.parse(time), until: Date.parse(m[2] ?? "") });
    } catch {
      // not a JSON line
    }
  }
  return out;
}

/** One failover as the fleet lived it; every `…Ms` counts from the kill. */
export interface FailoverRecovery {
  readonly target: string;
  readonly killedAt: number;
  readonly promotedMs: number;
  /** The first hold line after the kill: when it was logged, and how long it held (none: no hold). */
  readonly hold?: { readonly noticedMs: number; readonly lengthMs: number; readonly endMs: number };
  /** Grants per second over the 3 s before the kill: every source, and the broker's alone. */
  readonly baselinePerS: number;
  readonly brokerBaselinePerS: number;
  /** The first broker grant whose lease came after the kill's effects (undefined: none). */
  readonly firstBrokerGrantMs?: number;
  /** From when on the next 2 s averaged ≥ `share` of the baseline (undefined: never). */
  readonly fleetBackMs?: number;
  readonly brokerBackMs?: number;
  /** The bound the fleet must be back by: the hold's end (or the promotion) + 2 s. */
  readonly boundMs: number;
}

const BASELINE_MS = 3_000;
const WINDOW_MS = 2_000;
const STEP_MS = 100;
/** How long after the hold's end (or the promotion) the fleet may take to be back. */
export const BACK_WITHIN_MS = 2_000;

/** Sorted grant times → count in [from, to). */
function counter(times: readonly number[]): (from: number, to: number) => number {
  const lowerBound = (t: number): number => {
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((times[mid] ?? 0) < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return (from, to) => lowerBound(to) - lowerBound(from);
}

/**
 * The first t ≥ from (in STEP_MS steps) whose next WINDOW_MS held ≥ need grants per second on
 * average: a fleet at full speed again, not a lucky 100 ms.
 */
function backFrom(count: (from: number, to: number) => number, from: number, until: number, needPerS: number): number | undefined {
  for (let t = from; t + WINDOW_MS <= until; t += STEP_MS) if ((count(t, t + WINDOW_MS) * 1_000) / WINDOW_MS >= needPerS) return t;
  return undefined;
}

export function failoverRecoveries(opts: {
  readonly events: readonly FaultEvent[];
  readonly leases: readonly LeaseRecord[];
  readonly holds: readonly HoldLine[];
  /** The end of the recorded grants (the workers' stop). */
  readonly endAt: number;
  /** Share of the baseline that counts as back (default 0.8). */
  readonly share?: number;
}): FailoverRecovery[] {
  const share = opts.share ?? 0.8;
  const all = opts.leases.map((l) => l.grantedAt).sort((a, b) => a - b);
  const broker = opts.leases
    .filter((l) => l.source === "broker")
    .map((l) => l.grantedAt)
    .sort((a, b) => a - b);
  const countAll = counter(all);
  const countBroker = counter(broker);
  const out: FailoverRecovery[] = [];
  for (const e of opts.events) {
    const killedAt = e.marks?.["killedAt"];
    const promotedAt = e.marks?.["promotedAt"];
    if (e.kind !== "redis-failover" || e.error !== undefined || killedAt === undefined || promotedAt === undefined) continue;
    const hold = opts.holds.filter((h) => h.at >= killedAt && h.at <= killedAt + 60_000).sort((a, b) => a.at - b.at)[0];
    const holdEnd =
      hold === undefined
        ? undefined
        : Math.max(...opts.holds.filter((h) => h.at >= killedAt && h.at <= hold.at + 10_000).map((h) => h.until));
    const perS = (n: number): number => (n * 1_000) / BASELINE_MS;
    const baselinePerS = perS(countAll(killedAt - BASELINE_MS, killedAt));
    const brokerBaselinePerS = perS(countBroker(killedAt - BASELINE_MS, killedAt));
    const firstBroker = broker.find((t) => t > promotedAt);
    const fleetBack = backFrom(countAll, killedAt, opts.endAt, share * baselinePerS);
    // the broker's own leases: back only once the failover was noticed (before, they still ran on the old master)
    const brokerBack = backFrom(countBroker, promotedAt, opts.endAt, share * brokerBaselinePerS);
    out.push({
      target: e.target,
      killedAt,
      promotedMs: promotedAt - killedAt,
      ...(hold === undefined || holdEnd === undefined
        ? {}
        : { hold: { noticedMs: hold.at - killedAt, lengthMs: holdEnd - hold.at, endMs: holdEnd - killedAt } }),
      baselinePerS,
      brokerBaselinePerS,
      ...(firstBroker === undefined ? {} : { firstBrokerGrantMs: firstBroker - killedAt }),
      ...(fleetBack === undefined ? {} : { fleetBackMs: fleetBack - killedAt }),
      ...(brokerBack === undefined ? {} : { brokerBackMs: brokerBack - killedAt }),
      boundMs: (holdEnd ?? promotedAt) - killedAt + BACK_WITHIN_MS,
    });
  }
  return out;
}

/** A failover after which the fleet was not back within its bound (empty: every one was). */
export function lateRecoveries(recoveries: readonly FailoverRecovery[]): FailoverRecovery[] {
  return recoveries.filter((r) => r.fleetBackMs === undefined || r.fleetBackMs > r.boundMs);
}
