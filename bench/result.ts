import type { Slice } from "./measure.js";
import { percentiles } from "./meter.js";

/** What a scenario is, before it runs. */
export interface ScenarioShape {
  readonly id: string;
  readonly label: string;
  readonly system: "broker" | "seed000";
  readonly proxies: number;
  readonly workers: number;
  readonly domains: number;
  /** How long each loop holds a lease before releasing it (a crawler's request). */
  readonly holdMs: number;
}

/** The figures of one scenario, over the slices of its window that were used (see `usedSlices`). */
export interface ScenarioResult extends ScenarioShape {
  readonly seconds: number;
  readonly cycles: number;
  readonly cyclesPerSec: number;
  readonly failedAcquires: number;
  /** Failed acquires over the whole window, quiet or not. */
  readonly failedAcquiresAllSlices: number;
  readonly errors: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly redisCallsPerCycle: number;
  readonly evalshaPerCycle: number;
  readonly redisCpuUsPerCycle: number;
  /** The busiest Redis server's share of all Redis CPU (1 on one server; 1/3 when 3 masters share evenly). */
  readonly busiestRedisShare: number;
  readonly brokerCpuUsPerCycle: number;
  readonly clientCpuUsPerCycle: number;
  /** Cores used by other processes of the machine during the used slices (noise indicator). */
  readonly othersCores: number;
  readonly slicesUsed: number;
  /** Every slice of the window: its cycles/s and the cores other processes used meanwhile. */
  readonly slices: ReadonlyArray<{ readonly cyclesPerSec: number; readonly othersCores: number; readonly used: boolean }>;
  /** Redis calls per cycle and Redis µs per call, by command, most calls first. */
  readonly commandsPerCycle: Readonly<Record<string, { readonly calls: number; readonly usPerCall: number }>>;
}

/** A slice counts as quiet while other processes use less than this many cores. */
export const NOISY_CORES = 0.2;

function othersCores(s: Slice): number {
  return s.othersCpuUs / 1e6 / s.seconds;
}

/**
 * The slices a result is computed from: the quiet ones, as long as they are at least half of
 * the window; else the quieter half. The choice looks only at what *other* processes did, never
 * at the benchmark's own figures, and is made the same way for every scenario.
 */
export function usedSlices(slices: readonly Slice[]): Slice[] {
  const need = Math.ceil(slices.length / 2);
  const quiet = slices.filter((s) => othersCores(s) < NOISY_CORES);
  if (quiet.length >= need) return quiet;
  return [...slices].sort((a, b) => othersCores(a) - othersCores(b)).slice(0, need);
}

function sum(slices: readonly Slice[], pick: (s: Slice) => number): number {
  return slices.reduce((acc, s) => acc + pick(s), 0);
}

/** Turn a window's slices into per-cycle figures. */
export function toResult(shape: ScenarioShape, slices: readonly Slice[]): ScenarioResult {
  const used = usedSlices(slices);
  const cycles = sum(used, (s) => s.cycles);
  const seconds = sum(used, (s) => s.seconds);
  const per = (v: number) => (cycles > 0 ? v / cycles : Number.NaN);
  const { p50, p99 } = percentiles(used.flatMap((s) => s.latencies));

  const commands = new Map<string, { calls: number; usec: number }>();
  for (const s of used) {
    for (const c of s.redis.byCommand) {
      const m = commands.get(c.name) ?? { calls: 0, usec: 0 };
      commands.set(c.name, { calls: m.calls + c.calls, usec: m.usec + c.usec });
    }
  }
  const commandsPerCycle: Record<string, { calls: number; usPerCall: number }> = {};
  for (const [name, c] of [...commands.entries()].sort((a, b) => b[1].calls - a[1].calls)) {
    commandsPerCycle[name] = { calls: per(c.calls), usPerCall: c.usec / c.calls };
  }

  return {
    id: shape.id,
    label: shape.label,
    system: shape.system,
    proxies: shape.proxies,
    workers: shape.workers,
    domains: shape.domains,
    holdMs: shape.holdMs,
    seconds,
    cycles,
    cyclesPerSec: cycles / seconds,
    failedAcquires: sum(used, (s) => s.failures),
    failedAcquiresAllSlices: sum(slices, (s) => s.failures),
    errors: sum(slices, (s) => s.errors),
    p50Ms: p50,
    p99Ms: p99,
    redisCallsPerCycle: per(sum(used, (s) => s.redis.calls)),
    evalshaPerCycle: per(sum(used, (s) => s.redis.evalsha)),
    redisCpuUsPerCycle: per(sum(used, (s) => s.redis.cpuUs)),
    busiestRedisShare:
      sum(used, (s) => s.redis.busiestCpuUs) /
      Math.max(
        1,
        sum(used, (s) => s.redis.cpuUs),
      ),
    brokerCpuUsPerCycle: per(sum(used, (s) => s.brokerCpuUs)),
    clientCpuUsPerCycle: per(sum(used, (s) => s.clientCpuUs)),
    othersCores: sum(used, (s) => s.othersCpuUs) / 1e6 / seconds,
    slicesUsed: used.length,
    slices: slices.map((s) => ({ cyclesPerSec: s.cycles / s.seconds, othersCores: othersCores(s), used: used.includes(s) })),
    commandsPerCycle,
  };
}
