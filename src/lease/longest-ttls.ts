/**
 * The longest lease TTL per pool as this broker knows it: what the store recorded (its `lt`, read
 * every second: other replicas' grants count too) and what this broker granted or renewed itself
 * since. A hold after a loss of the store's state waits for it (not a default or a maximum), and
 * the pool snapshot tells workers the same. A value counts until a lease of that TTL, granted or
 * renewed when it was last seen, must have ended (+ `SLACK_MS`).
 */

/** What a value counts for beyond its own TTL: the store refreshes its record once a second. */
const SLACK_MS = 2_000;

interface Seen {
  readonly ttlMs: number;
  readonly at: number;
}

export class LongestTtls {
  private readonly own = new Map<string, Seen>();
  private readonly stored = new Map<string, Seen>();

  constructor(private readonly capMs: number) {}

  /** This broker granted or renewed a lease of `ttlMs` in `pool` at `now`. */
  note(pool: string, ttlMs: number, now: number): void {
    const was = this.own.get(pool);
    if (was === undefined || ttlMs >= was.ttlMs || !live(was, now)) this.own.set(pool, { ttlMs, at: now });
  }

  /** The store's record of the pool's longest TTL lately, read at `now` (0: none lately). */
  observed(pool: string, ttlMs: number, now: number): void {
    const was = this.stored.get(pool);
    // a lower reading does not lower what a lease seen a moment ago may still need
    if (was === undefined || ttlMs >= was.ttlMs || !live(was, now)) this.stored.set(pool, { ttlMs, at: now });
  }

  /** The longest TTL a lease of `pool` may still be running with at `now` (at most the cap). */
  of(pool: string, now: number): number {
    let best = 0;
    for (const seen of [this.own.get(pool), this.stored.get(pool)]) {
      if (seen !== undefined && live(seen, now) && seen.ttlMs > best) best = seen.ttlMs;
    }
    return Math.min(best, this.capMs);
  }
}

function live(seen: Seen, now: number): boolean {
  return now - seen.at <= seen.ttlMs + SLACK_MS;
}
