/**
 * How many reported outcomes (ReportOutcomes) each caller may have applied: a token bucket per
 * caller of `perMinute` outcomes that refills continuously, so one SDK replaying its whole
 * outcome buffer passes while a client that floods reports is refused (RESOURCE_EXHAUSTED) once
 * its bucket is empty. A call is taken whole or not at all. Buckets that refilled completely are
 * forgotten, so invented caller ids cost nothing for long; beyond `maxCallers` buckets, new
 * callers share one.
 */
export interface ReportBudgetOptions {
  readonly perMinute: number;
  readonly clock: () => number;
  /** Buckets kept at most (default 100,000). */
  readonly maxCallers?: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

const MINUTE_MS = 60_000;
const OVERFLOW = "\u0000overflow";
const SWEEP_MS = 10_000;

export class ReportBudget {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep = 0;

  constructor(private readonly opts: ReportBudgetOptions) {}

  /** The bucket size: outcomes per minute per caller. */
  get perMinute(): number {
    return this.opts.perMinute;
  }

  /** Buckets kept now. */
  get size(): number {
    return this.buckets.size;
  }

  /**
   * Take `n` outcomes from `caller`'s bucket. Answers 0 when taken, else the ms until the bucket
   * holds `n` again (never more than a minute: a call larger than the bucket is refused by its
   * size limit first).
   */
  take(caller: string, n: number): number {
    const now = this.opts.clock();
    this.sweep(now);
    const bucket = this.bucketOf(caller, now);
    if (bucket.tokens >= n) {
      bucket.tokens -= n;
      return 0;
    }
    const rate = this.opts.perMinute / MINUTE_MS;
    return Math.min(MINUTE_MS, Math.ceil((Math.min(n, this.opts.perMinute) - bucket.tokens) / rate));
  }

  private bucketOf(caller: string, now: number): Bucket {
    let key = caller;
    let bucket = this.buckets.get(key);
    if (bucket === undefined && this.buckets.size >= (this.opts.maxCallers ?? 100_000)) {
      key = OVERFLOW;
      bucket = this.buckets.get(key);
    }
    if (bucket === undefined) {
      bucket = { tokens: this.opts.perMinute, at: now };
      this.buckets.set(key, bucket);
      return bucket;
    }
    bucket.tokens = Math.min(this.opts.perMinute, bucket.tokens + ((now - bucket.at) * this.opts.perMinute) / MINUTE_MS);
    bucket.at = now;
    return bucket;
  }

  /** Forget the buckets that are full again by now. */
  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_MS) return;
    this.lastSweep = now;
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) * this.opts.perMinute) / MINUTE_MS >= this.opts.perMinute) this.buckets.delete(key);
    }
  }
}
