/**
 * Benchmark settings, each from one environment variable with its default beside it. Loaded
 * once by `loadBenchConfig`; an invalid value stops the run with a message naming the variable.
 */
export interface BenchConfig {
  /** BENCH_SECONDS — measured seconds per scenario. */
  readonly seconds: number;
  /** BENCH_SLICE_SECONDS — the window is measured in slices this long (see result.ts `usedSlices`). */
  readonly sliceSeconds: number;
  /** BENCH_WARMUP_SECONDS — unmeasured seconds before each measurement. */
  readonly warmupSeconds: number;
  /** BENCH_PROXIES — pool size of the steady and contention scenarios. */
  readonly proxies: number;
  /** BENCH_SCALE_PROXIES — pool size of the scale scenario. */
  readonly scaleProxies: number;
  /** BENCH_STEADY_WORKERS / BENCH_STEADY_DOMAINS — the steady shape. */
  readonly steadyWorkers: number;
  readonly steadyDomains: number;
  /** BENCH_CONTENTION_WORKERS / BENCH_CONTENTION_DOMAINS — the contention shape. */
  readonly contentionWorkers: number;
  readonly contentionDomains: number;
  /** BENCH_MAX_WAIT_MS — max_wait of the broker's acquires in the contention scenario. */
  readonly contentionMaxWaitMs: number;
  /** BENCH_RETRY_PAUSE_MS — pause after a failed acquire before the next try. */
  readonly retryPauseMs: number;
  /**
   * BENCH_HOLD_MS — how long a loop holds each lease before releasing it, as a crawler would for
   * its request. Default 0: the figures measure coordination only (no sleeps in the loops).
   */
  readonly holdMs: number;
  /**
   * BENCH_CONTENTION_HOLD_MS — the same for the contention scenario. Default 20 ms: seed 000's
   * top-50 window only runs dry when more than 50 leases per domain are held at once, which
   * takes leases that are held for a while, as a crawler's are; both sides hold them alike.
   */
  readonly contentionHoldMs: number;
  /** BENCH_PROFILE=1 — one extra, profiled run of steady release-and-next (`node --cpu-prof`). */
  readonly profile: boolean;
  /** BENCH_ONLY — comma-separated scenario ids to run (empty = all). */
  readonly only: readonly string[];
}

type Env = Readonly<Record<string, string | undefined>>;

function num(env: Env, name: string, def: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return def;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min) throw new Error(`${name}=${raw} must be a number ≥ ${min}`);
  return v;
}

/** Integer setting `name` of `env` (≥ `min`; unset or blank: `def`); throws naming a bad value. */
export function int(env: Env, name: string, def: number, min: number): number {
  const v = num(env, name, def, min);
  if (!Number.isInteger(v)) throw new Error(`${name}=${v} must be an integer`);
  return v;
}

/** Read the benchmark settings from the environment. */
export function loadBenchConfig(env: Env = process.env): BenchConfig {
  return {
    seconds: num(env, "BENCH_SECONDS", 5, 0.1),
    warmupSeconds: num(env, "BENCH_WARMUP_SECONDS", 1, 0),
    sliceSeconds: num(env, "BENCH_SLICE_SECONDS", 1, 0.1),
    proxies: int(env, "BENCH_PROXIES", 1_000, 1),
    scaleProxies: int(env, "BENCH_SCALE_PROXIES", 100_000, 1),
    steadyWorkers: int(env, "BENCH_STEADY_WORKERS", 50, 1),
    steadyDomains: int(env, "BENCH_STEADY_DOMAINS", 20, 1),
    contentionWorkers: int(env, "BENCH_CONTENTION_WORKERS", 200, 1),
    contentionDomains: int(env, "BENCH_CONTENTION_DOMAINS", 2, 1),
    contentionMaxWaitMs: int(env, "BENCH_MAX_WAIT_MS", 5_000, 0),
    retryPauseMs: num(env, "BENCH_RETRY_PAUSE_MS", 1, 0),
    holdMs: num(env, "BENCH_HOLD_MS", 0, 0),
    contentionHoldMs: num(env, "BENCH_CONTENTION_HOLD_MS", 20, 0),
    profile: env["BENCH_PROFILE"] === "1",
    only: (env["BENCH_ONLY"] ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== ""),
  };
}
