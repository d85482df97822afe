/**
 * Leases this broker granted per (pool, domain-key) in the last minute, in one-second buckets;
 * bounded (at most MAX_KEYS domain-keys: beyond, the grants are not counted per domain-key).
 */
const BUCKETS = 60;
const MAX_KEYS = 10_000;

interface Counter {
  /** Grants per second, ring of BUCKETS. */
  readonly counts: Uint32Array;
  /** The second each bucket counts. */
  readonly seconds: Float64Array;
}

export class GrantCounts {
  private readonly byKey = new Map<string, Counter>();

  add(pool: string, domainKey: string, now: number): void {
    const key = `${pool}\u0000${domainKey}`;
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

  /** Grants in the last minute per domain-key of `pool`. */
  perDomain(pool: string, now: number): Map<string, number> {
    const out = new Map<string, number>();
    const prefix = `${pool}\u0000`;
    for (const [key, c] of this.byKey) {
      if (!key.startsWith(prefix)) continue;
      const n = total(c, now);
      if (n > 0) out.set(key.slice(prefix.length), n);
    }
    return out;
  }

  /** Forget the domain-keys without a grant in the last minute. */
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
