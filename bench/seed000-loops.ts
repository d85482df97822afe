/**
 * Seed 000's loops for the benchmark: the baseline itself is test/support/seed000.ts.
 */
import type { Seed000 } from "../test/support/seed000.js";
import type { Meter, StopFlag } from "./meter.js";
import { pause } from "./pause.js";

export interface SeedLoopOptions {
  readonly seed: Seed000;
  readonly workers: number;
  readonly domains: readonly string[];
  readonly retryPauseMs: number;
  /** Hold each lease this long before giving it back (0: at once). */
  readonly holdMs: number;
  readonly meter: Meter;
  readonly stop: StopFlag;
}

/**
 * `workers` loops of borrow → give back, each cycling through the domains round-robin. A borrow
 * that locks none of the 50 candidates is a failed acquire: the loop pauses and tries the same
 * domain again. Acquire latency runs from the first try to the lock, retries included.
 */
export async function runSeedLoops(opts: SeedLoopOptions): Promise<void> {
  await Promise.all(Array.from({ length: opts.workers }, (_, i) => seedLoop(opts, i)));
}

async function seedLoop(opts: SeedLoopOptions, index: number): Promise<void> {
  const { seed, domains, meter, stop } = opts;
  const workerId = `bench-w${index}`;
  let d = index % domains.length;
  while (!stop.stopped) {
    const domain = domains[d] ?? "";
    d = (d + 1) % domains.length;
    const askedAt = performance.now();
    let addr = await seed.borrow(domain, workerId);
    while (addr === undefined && !stop.stopped) {
      meter.failure();
      await pause(opts.retryPauseMs);
      addr = await seed.borrow(domain, workerId);
    }
    if (addr === undefined) break;
    meter.granted(performance.now() - askedAt);
    if (opts.holdMs > 0) await pause(opts.holdMs);
    await seed.giveBack(addr, domain);
    meter.cycle();
  }
}
