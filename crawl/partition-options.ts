/**
 * The partition mode of a crawl (CRAWL_PARTITION_AT_S, CRAWL_PARTITION_WORKER,
 * CRAWL_PARTITION_MIN_RATIO, CRAWL_PARTITION_MIN_EFFICIENCY): read from the environment, checked against the worker mix, and the
 * id of the worker that is cut off.
 */
import { SETTLE_MS } from "./partition.js";

export interface PartitionOptions {
  /** Cut the worker off the broker this long into the window, ms. */
  readonly atMs: number;
  /** The worker cut off: its language and its index among that language's workers. */
  readonly language: "ts" | "py";
  readonly index: number;
  /** The gate's bound on pages/s from 8 s after the cut ÷ pages/s before it (0: not checked). */
  readonly minRatio: number;
  /** The gate's bound on the fleet's efficiency after the cut (0: not checked). */
  readonly minEfficiency: number;
}

/**
 * CRAWL_PARTITION_AT_S (unset, empty or 0: off), CRAWL_PARTITION_WORKER (`ts-0`),
 * CRAWL_PARTITION_MIN_RATIO and CRAWL_PARTITION_MIN_EFFICIENCY (0: not checked).
 */
export function readPartition(env: NodeJS.ProcessEnv = process.env): PartitionOptions | undefined {
  const rawAt = env["CRAWL_PARTITION_AT_S"] ?? "";
  const atS = rawAt === "" ? 0 : Number(rawAt);
  if (!Number.isFinite(atS) || atS < 0) throw new Error(`CRAWL_PARTITION_AT_S must be a number of seconds ≥ 0, got "${rawAt}"`);
  const rawWorker = (env["CRAWL_PARTITION_WORKER"] ?? "").trim() || "ts-0";
  const m = /^(ts|py)-(\d+)$/.exec(rawWorker);
  if (m === null) throw new Error(`CRAWL_PARTITION_WORKER must be ts-<i> or py-<i>, got "${rawWorker}"`);
  const minRatio = bound(env, "CRAWL_PARTITION_MIN_RATIO");
  const minEfficiency = bound(env, "CRAWL_PARTITION_MIN_EFFICIENCY");
  if (atS === 0) return undefined;
  return { atMs: atS * 1000, language: m[1] === "py" ? "py" : "ts", index: Number(m[2]), minRatio, minEfficiency };
}

/** A gate bound: a number ≥ 0 (unset or empty: 0, not checked). */
function bound(env: NodeJS.ProcessEnv, name: string): number {
  const raw = env[name] ?? "";
  const v = raw === "" ? 0 : Number(raw);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a number ≥ 0, got "${raw}"`);
  return v;
}

/** What the partition is checked against: the window, the worker mix, the strategies and the crash mode. */
export interface PartitionRun {
  readonly seconds: number;
  readonly workers: number;
  /** Of `workers`, the Python ones (proxybroker strategy). */
  readonly pythonWorkers: number;
  /** The proxybroker strategy runs. */
  readonly proxybroker: boolean;
  /** The crash mode (CRAWL_KILL_AT_S) is on. */
  readonly crash: boolean;
}

/** What the partition needs of the run; throws with the reason when it cannot be had. */
export function checkPartition(p: PartitionOptions, run: PartitionRun): void {
  if (!run.proxybroker) throw new Error("CRAWL_PARTITION_AT_S needs the proxybroker strategy in CRAWL_STRATEGIES");
  if (run.crash) throw new Error("CRAWL_PARTITION_AT_S and CRAWL_KILL_AT_S: one chaos mode at a time");
  if (p.atMs >= run.seconds * 1000) throw new Error(`CRAWL_PARTITION_AT_S must be inside the window (< CRAWL_SECONDS = ${run.seconds})`);
  if (p.minRatio > 0 && p.atMs + SETTLE_MS >= run.seconds * 1000)
    throw new Error(`CRAWL_PARTITION_MIN_RATIO needs the window to go on more than ${SETTLE_MS / 1000} s after CRAWL_PARTITION_AT_S`);
  const count = p.language === "py" ? run.pythonWorkers : run.workers - run.pythonWorkers;
  if (p.index >= count) {
    const what = p.language === "py" ? "Python" : "TypeScript";
    throw new Error(`CRAWL_PARTITION_WORKER=${p.language}-${p.index}, but the proxybroker strategy runs ${count} ${what} workers`);
  }
}

/** "worker ts-0 cut off the broker at 8 s" */
export function describePartition(p: PartitionOptions | undefined): string {
  if (p === undefined) return "";
  return `worker ${p.language}-${p.index} cut off the broker at ${p.atMs / 1000} s`;
}
