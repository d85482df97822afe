/**
 * Internal to the in-memory engine: leader leases by name, one holder each, and the last term
 * given per name (a new holder's term is above every earlier one, and at least the clock).
 */
import type { Campaign } from "../store.js";

export class Leaders {
  private readonly leaders = new Map<string, { owner: string; term: number; until: number }>();
  private readonly terms = new Map<string, number>();

  campaign(name: string, owner: string, ttlMs: number, now: number): Campaign {
    const cur = this.leaders.get(name);
    if (cur !== undefined && cur.until > now) {
      if (cur.owner !== owner) return { leader: false, term: cur.term, holder: cur.owner, remainingMs: cur.until - now };
      cur.until = now + ttlMs;
      return { leader: true, term: cur.term, holder: owner, remainingMs: ttlMs };
    }
    const term = Math.max((this.terms.get(name) ?? 0) + 1, Math.floor(now));
    this.terms.set(name, term);
    this.leaders.set(name, { owner, term, until: now + ttlMs });
    return { leader: true, term, holder: owner, remainingMs: ttlMs };
  }

  resign(name: string, owner: string): void {
    if (this.leaders.get(name)?.owner === owner) this.leaders.delete(name);
  }
}
