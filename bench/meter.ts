/** What the loops did in one slice of the measurement window. */
export interface Counts {
  readonly seconds: number;
  /** Completed cycles (a granted lease released). */
  readonly cycles: number;
  /** Acquires that got no lease (the loop pauses and tries again). */
  readonly failures: number;
  /** Answers that should not happen here (lost leases, errors), for the record. */
  readonly errors: number;
  /** Acquire latencies of the grants, ms. */
  readonly latencies: readonly number[];
}

/**
 * Counts what the loops of one scenario do. Nothing is counted before `begin` (the warm-up) or
 * after `end`; `take` hands over the counts since the last `begin`/`take` and goes on counting.
 */
export class Meter {
  private measuring = false;
  private since = 0;
  private cycles = 0;
  private failures = 0;
  private errors = 0;
  private latencies: number[] = [];

  begin(): void {
    this.reset();
    this.measuring = true;
  }

  /** The counts since the last `begin` or `take`, then count afresh. */
  take(): Counts {
    const counts: Counts = {
      seconds: (performance.now() - this.since) / 1000,
      cycles: this.cycles,
      failures: this.failures,
      errors: this.errors,
      latencies: this.latencies,
    };
    this.reset();
    return counts;
  }

  end(): void {
    this.measuring = false;
  }

  /** One acquire granted `latencyMs` after it was asked for. */
  granted(latencyMs: number): void {
    if (this.measuring) this.latencies.push(latencyMs);
  }

  /** One lease released: a completed cycle. */
  cycle(): void {
    if (this.measuring) this.cycles++;
  }

  failure(): void {
    if (this.measuring) this.failures++;
  }

  error(): void {
    if (this.measuring) this.errors++;
  }

  private reset(): void {
    this.since = performance.now();
    this.cycles = 0;
    this.failures = 0;
    this.errors = 0;
    this.latencies = [];
  }
}

/** Latency percentiles in ms (NaN when nothing was granted). */
export function percentiles(latencies: readonly number[]): { p50: number; p99: number } {
  const sorted = Float64Array.from(latencies).sort();
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
}

function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
  return sorted[Math.max(0, i)] ?? Number.NaN;
}

/** Set by the scenario when the loops should finish their current step and end. */
export interface StopFlag {
  readonly stopped: boolean;
}
