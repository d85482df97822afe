/**
 * The pairs banned and cooled down in the last hour, per pool and domain-key, from the pool's
 * event stream (BAN and admin bans, COOL_DOWN). The stream is read once from the oldest event it
 * keeps, then only from where the last read ended, so that the status page (polling every 2 s)
 * and GetDomainStats do not read the whole stream again each time.
 */
import type { StoreEvents } from "@proxybroker/sdk/engine";

const HOUR_MS = 3_600_000;
const PAGE = 1_000;
/** Pages read per call at most (the stream keeps about 10,000 events). */
const MAX_PAGES = 20;
/** Events kept per pool at most (the oldest go first). */
const MAX_KEPT = 100_000;

interface Kept {
  readonly at: number;
  readonly ban: boolean;
  readonly domainKey: string;
}

interface PoolTail {
  cursor: string;
  events: Kept[];
  /** The read in progress: calls of one pool run one after the other. */
  reading: Promise<void>;
}

export interface Restrictions {
  readonly bans: ReadonlyMap<string, number>;
  readonly coolDowns: ReadonlyMap<string, number>;
}

export class RecentRestrictions {
  private readonly pools = new Map<string, PoolTail>();

  /** Bans and cool-downs per domain-key of `pool` in the hour before `now`. */
  async of(store: StoreEvents, pool: string, now: number): Promise<Restrictions> {
    let tail = this.pools.get(pool);
    if (tail === undefined) {
      tail = { cursor: "", events: [], reading: Promise.resolve() };
      this.pools.set(pool, tail);
    }
    const t = tail;
    t.reading = t.reading.catch(() => undefined).then(() => this.read(store, pool, t));
    await t.reading;
    const since = now - HOUR_MS;
    let old = 0;
    while (old < t.events.length && t.events[old]!.at <= since) old++;
    if (old > 0) t.events.splice(0, old);
    const bans = new Map<string, number>();
    const coolDowns = new Map<string, number>();
    for (const e of t.events) {
      const m = e.ban ? bans : coolDowns;
      m.set(e.domainKey, (m.get(e.domainKey) ?? 0) + 1);
    }
    return { bans, coolDowns };
  }

  private async read(store: StoreEvents, pool: string, t: PoolTail): Promise<void> {
    for (let i = 0; i < MAX_PAGES; i++) {
      const r = await store.readEvents(pool, t.cursor, { count: PAGE, blockMs: 0 });
      t.cursor = r.cursor;
      for (const e of r.events) {
        const ban = e.kind === "BAN" || (e.kind === "ADMIN" && e.detail.startsWith("ban on "));
        if (ban || e.kind === "COOL_DOWN") t.events.push({ at: e.at, ban, domainKey: e.domainKey });
      }
      if (r.events.length < PAGE) break;
    }
    if (t.events.length > MAX_KEPT) t.events.splice(0, t.events.length - MAX_KEPT);
  }
}
