/**
 * Counts of the last minute per (scope, key) — e.g. grants per (pool, domain-key), per (pool,
 * worker), outcomes per kind — in one-second buckets; bounded (at most MAX_KEYS keys: beyond,
 * new keys are not counted until old ones go quiet).
 */
const BUCKETS = 60;
const MAX_KEYS = 10_000;

interface Counter {
  /** Grants per second, ring of BUCKETS. */
  readonly counts: Uint32Array;
  /** The second each bucket counts. */
  readonly seconds: Float64Array;
}

export class MinuteCounts {
  private readonly byKey = new Map<string, Counter>();

  add(scope: string, name: string, now: number): void {
    const key = `${scope}\u0000${name}`;
    let c = this.byKey.get(key);
    if (c === undefined) {
      if (this.byKey.size >= MAX_KEYS) this.prune(now);
      if (this.byKey.size >= MAX_KEYS) return;
      c = { counts: new Uint32Array(BUCKETS), seconds: new Float64Array(BUCKETS).fill(-1) };
      this.byKey.set(key, c);
    }
    const sec = Math.floor(now / 1000);
    const i = sec % BUCKETS;
    if (c.seconds[i] !== sec) {
      c.seconds[i] = sec;
      c.counts[i] = 0;
    }
    c.counts[i]! += 1;
  }

  /** The last minute's count of every key of `scope`. */
  of(scope: string, now: number): Map<string, number> {
    const out = new Map<string, number>();
    const prefix = `${scope}\u0000`;
    for (const [key, c] of this.byKey) {
      if (!key.startsWith(prefix)) continue;
      const n = total(c, now);
      if (n > 0) out.set(key.slice(prefix.length), n);
    }
    return out;
  }

  /** Forget the keys without a count in the last minute. */
  prune(now: number): void {
    for (const [key, c] of this.byKey) if (total(c, now) === 0) this.byKey.delete(key);
  }
}

function total(c: Counter, now: number): number {
  const sec = Math.floor(now / 1000);
  let n = 0;
  for (let i = 0; i < BUCKETS; i++) if (sec - c.seconds[i]! < BUCKETS) n += c.counts[i]!;
  return n;
}
