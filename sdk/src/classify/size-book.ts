import { RunningMedian } from "./size-median.js";
import type { SizeStats } from "./types.js";

/**
 * Running medians of body sizes per host, or per host and page kind (`sizeKey`), at most
 * `maxKeys` of them: the least recently used is dropped first, so a broad crawl over many hosts
 * stays bounded.
 */

function keyOf(host: string, sizeKey: string | undefined): string {
  return sizeKey === undefined ? host : `${host} ${sizeKey}`;
}

/** Size medians keyed by host (+ page kind). */
export class SizeBook {
  private readonly medians = new Map<string, RunningMedian>();

  /** `maxKeys` ≥ 1: how many medians are kept at once. */
  constructor(private readonly maxKeys: number = 10_000) {
    if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError(`maxKeys must be an integer ≥ 1, got ${maxKeys}`);
  }

  /** The median and how many sizes it rests on; undefined when none is known. */
  stats(host: string, sizeKey?: string): SizeStats | undefined {
    const m = this.medians.get(keyOf(host, sizeKey));
    const median = m?.median();
    return m === undefined || median === undefined ? undefined : { median, samples: m.count };
  }

  /** Record the size of a successful page; `window` applies when the median is new. */
  record(host: string, sizeKey: string | undefined, bytes: number, window: number): void {
    const key = keyOf(host, sizeKey);
    let m = this.medians.get(key);
    if (m === undefined) {
      m = new RunningMedian(window);
    } else {
      this.medians.delete(key); // re-inserted below: Map order is the recency order
    }
    m.add(bytes);
    this.medians.set(key, m);
    if (this.medians.size > this.maxKeys) {
      const oldest = this.medians.keys().next();
      if (oldest.done !== true) this.medians.delete(oldest.value);
    }
  }

  /** Forget every median of `host` (all page kinds), or of every host. */
  reset(host?: string): void {
    if (host === undefined) {
      this.medians.clear();
      return;
    }
    for (const key of [...this.medians.keys()]) {
      if (key === host || key.startsWith(`${host} `)) this.medians.delete(key);
    }
  }

  /** How many medians are kept. */
  get size(): number {
    return this.medians.size;
  }
}
