/**
 * Internal to the in-memory engine: what a pool remembers of its recent leases for the hold after
 * a loss of state and for fallback shares — the longest lease TTL granted or renewed lately, and
 * which worker used which domain-key (docs/store-semantics.md §longest TTL, §domain uses). The
 * Redis scripts keep the same records by the same rules.
 */
import type { DomainUse } from "../../model/model.js";

/**
 * A record of the longest TTL is refreshed at most this often by leases of that very TTL, and
 * counts this much longer than its TTL (the Redis store writes it once a second at most).
 */
export const LONGEST_TTL_REFRESH_MS = 1_000;
/** Domain-key uses kept per pool at most; beyond, the least recently used go first. */
export const MAX_DOMAIN_USES = 100_000;

/** The longest lease TTL granted or renewed lately (ms), and when a lease of that TTL last was. */
export class LongestTtl {
  private ms = 0;
  private at = 0;

  /** A lease of `ttlMs` was granted or renewed at `now`. */
  note(ttlMs: number, now: number): void {
    if (ttlMs > this.ms || this.stale(now)) {
      this.ms = ttlMs;
      this.at = now;
    } else if (ttlMs === this.ms && now - this.at >= LONGEST_TTL_REFRESH_MS) {
      this.at = now;
    }
  }

  /** The longest TTL a lease may still be running with at `now` (0: none lately). */
  get(now: number): number {
    return this.stale(now) ? 0 : this.ms;
  }

  /** No lease of that TTL was granted or renewed for longer than the TTL: none can run any more. */
  private stale(now: number): boolean {
    return now - this.at > this.ms + LONGEST_TTL_REFRESH_MS;
  }
}

/** Worker × domain-key → its first and last recorded use (least recently used first). */
export class DomainUses {
  private readonly uses = new Map<string, { workerId: string; domainKey: string; first: number; last: number }>();

  /** A lease of `workerId` for `domainKey` at `now`; a record not used for `windowMs` starts over. */
  record(workerId: string, domainKey: string, now: number, windowMs: number): void {
    const key = `${workerId}\n${domainKey}`;
    const was = this.uses.get(key);
    const first = was !== undefined && was.last + windowMs > now ? was.first : now;
    this.uses.delete(key);
    this.uses.set(key, { workerId, domainKey, first, last: now });
    this.trim();
  }

  /** Put back a record, unless a later one is kept. */
  remember(use: DomainUse): void {
    const key = `${use.workerId}\n${use.domainKey}`;
    const was = this.uses.get(key);
    if (was !== undefined && was.last >= use.lastUsedAt) return;
    this.uses.delete(key);
    this.uses.set(key, { workerId: use.workerId, domainKey: use.domainKey, first: use.firstUsedAt, last: use.lastUsedAt });
    this.trim();
  }

  /** Records last used at or after `sinceMs`; older ones are dropped. */
  since(sinceMs: number): DomainUse[] {
    const out: DomainUse[] = [];
    for (const [key, u] of this.uses) {
      if (u.last < sinceMs) this.uses.delete(key);
      else out.push({ workerId: u.workerId, domainKey: u.domainKey, firstUsedAt: u.first, lastUsedAt: u.last });
    }
    return out;
  }

  private trim(): void {
    for (const key of this.uses.keys()) {
      if (this.uses.size <= MAX_DOMAIN_USES) return;
      this.uses.delete(key);
    }
  }
}
