import type { ScenarioResult } from "./result.js";

/** One target of the brief and whether this run meets it (undefined: its scenarios did not run). */
export interface Target {
  readonly text: string;
  readonly actual: string;
  readonly met: boolean | undefined;
}

/** One broker ÷ seed 000 (or scale ÷ steady) comparison. */
export interface Ratio {
  readonly text: string;
  readonly cyclesPerSec: number;
  readonly redisCpuPerCycle: number;
}

type ById = (id: string) => ScenarioResult | undefined;

function lookup(results: readonly ScenarioResult[]): ById {
  return (id) => results.find((r) => r.id === id);
}

function ratio(text: string, a: ScenarioResult | undefined, b: ScenarioResult | undefined): Ratio[] {
  if (a === undefined || b === undefined) return [];
  return [{ text, cyclesPerSec: a.cyclesPerSec / b.cyclesPerSec, redisCpuPerCycle: a.redisCpuUsPerCycle / b.redisCpuUsPerCycle }];
}

/** The ratios the table is read with. */
export function ratios(results: readonly ScenarioResult[]): Ratio[] {
  const by = lookup(results);
  return [
    ...ratio("steady: broker release-and-next ÷ seed 000", by("steady-next"), by("steady-seed000")),
    ...ratio("steady: broker separate messages ÷ seed 000", by("steady-separate"), by("steady-seed000")),
    ...ratio("steady: broker release-and-next, batched ÷ REDIS_BATCH_MAX=1", by("steady-next"), by("steady-next-unbatched")),
    ...ratio("steady: broker release-and-next, one isolation group ÷ none", by("steady-next-isolated"), by("steady-next")),
    ...ratio("steady: the same, right after the group was set ÷ none", by("steady-next-isolated-fresh"), by("steady-next")),
    ...ratio("contention: broker release-and-next ÷ seed 000", by("contention-next"), by("contention-seed000")),
    ...ratio("contention: broker separate messages ÷ seed 000", by("contention-separate"), by("contention-seed000")),
    ...ratio("scale: broker P=large ÷ broker P=steady (both release-and-next)", by("scale-next"), by("steady-next")),
  ];
}

const f = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");

function target(text: string, check: () => { actual: string; met: boolean } | undefined): Target {
  const r = check();
  return r === undefined ? { text, actual: "not run", met: undefined } : { text, ...r };
}

/** The targets of the brief, evaluated on this run. */
export function targets(results: readonly ScenarioResult[]): Target[] {
  const by = lookup(results);
  const both = (a: string, b: string) => {
    const x = by(a);
    const y = by(b);
    return x !== undefined && y !== undefined ? ([x, y] as const) : undefined;
  };
  return [
    target("steady: Redis CPU per cycle, broker (release-and-next) ≤ seed 000", () => {
      const p = both("steady-next", "steady-seed000");
      if (!p) return undefined;
      const [b, s] = p;
      return {
        actual: `${f(b.redisCpuUsPerCycle)} µs vs ${f(s.redisCpuUsPerCycle)} µs (${f(b.redisCpuUsPerCycle / s.redisCpuUsPerCycle, 2)}×)`,
        met: b.redisCpuUsPerCycle <= s.redisCpuUsPerCycle,
      };
    }),
    target("steady: cycles/s, broker (release-and-next) ≥ 1.0× seed 000", () => {
      const p = both("steady-next", "steady-seed000");
      if (!p) return undefined;
      const [b, s] = p;
      return {
        actual: `${f(b.cyclesPerSec, 0)} vs ${f(s.cyclesPerSec, 0)} (${f(b.cyclesPerSec / s.cyclesPerSec, 2)}×)`,
        met: b.cyclesPerSec >= s.cyclesPerSec,
      };
    }),
    target("contention: 0 failed acquires for the broker (release-and-next)", () => {
      const b = by("contention-next");
      return b && { actual: `${b.failedAcquiresAllSlices} failed`, met: b.failedAcquiresAllSlices === 0 };
    }),
    target("contention: broker granted cycles/s ≥ seed 000 successful cycles/s", () => {
      const p = both("contention-next", "contention-seed000");
      if (!p) return undefined;
      const [b, s] = p;
      return {
        actual: `${f(b.cyclesPerSec, 0)} vs ${f(s.cyclesPerSec, 0)} (${f(b.cyclesPerSec / s.cyclesPerSec, 2)}×)`,
        met: b.cyclesPerSec >= s.cyclesPerSec,
      };
    }),
    target("contention: Redis CPU per cycle, broker ≤ ½ of seed 000", () => {
      const p = both("contention-next", "contention-seed000");
      if (!p) return undefined;
      const [b, s] = p;
      return {
        actual: `${f(b.redisCpuUsPerCycle)} µs vs ${f(s.redisCpuUsPerCycle)} µs (${f(b.redisCpuUsPerCycle / s.redisCpuUsPerCycle, 2)}×)`,
        met: b.redisCpuUsPerCycle <= s.redisCpuUsPerCycle / 2,
      };
    }),
    target("scale: cycles/s at the large pool ≥ 1/1.5 of the steady pool", () => {
      const p = both("scale-next", "steady-next");
      if (!p) return undefined;
      const [l, s] = p;
      return {
        actual: `${f(l.cyclesPerSec, 0)} vs ${f(s.cyclesPerSec, 0)} (${f(l.cyclesPerSec / s.cyclesPerSec, 2)}×, need ≥ 0.67×)`,
        met: l.cyclesPerSec * 1.5 >= s.cyclesPerSec,
      };
    }),
  ];
}
