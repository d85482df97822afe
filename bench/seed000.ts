import type { Redis } from "ioredis";
import type { Meter, StopFlag } from "./meter.js";
import { pause } from "./pause.js";

/** The pool key of seed 000. */
export const SEED_POOL_KEY = "proxy:pool:default";
const CANDIDATES = 50;
const LOCK_TTL_SECONDS = 30;
const SUCCESS_DELTA = 2;

/**
 * Seed 000's algorithm, straight on Redis (seeds/000, `_borrow_proxy` / `_return_proxy`):
 * borrow = ZREVRANGE of the top 50 WITHSCORES, then `SET proxy:lock:{ip:port}:{domain} worker
 * EX 30 NX` per candidate, in score order, until one locks; give back = DEL of the lock and
 * ZINCRBY +2 (SUCCESS). One connection, shared by every loop of the process.
 */
export class Seed000 {
  constructor(private readonly redis: Redis) {}

  /** The first of the top 50 that this worker could lock for `domain`, or undefined. */
  async borrow(domain: string, workerId: string): Promise<string | undefined> {
    const flat = await this.redis.zrevrange(SEED_POOL_KEY, 0, CANDIDATES - 1, "WITHSCORES");
    for (let i = 0; i < flat.length; i += 2) {
      const addr = flat[i] ?? "";
      const locked = await this.redis.set(lockKey(addr, domain), workerId, "EX", LOCK_TTL_SECONDS, "NX");
      if (locked === "OK") return addr;
    }
    return undefined;
  }

  /**
   * Release the lock and add the SUCCESS points. The seed sends the two commands one after the
   * other; here both go out at once on the same connection (same order, one round trip fewer).
   */
  async giveBack(addr: string, domain: string): Promise<void> {
    await Promise.all([this.redis.del(lockKey(addr, domain)), this.redis.zincrby(SEED_POOL_KEY, SUCCESS_DELTA, addr)]);
  }
}

function lockKey(addr: string, domain: string): string {
  return `proxy:lock:${addr}:${domain}`;
}

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
