/**
 * How long proxies stay out after a ban, a cool-down or a quarantine — their recovery time — read
 * from the pools' event streams: each call reads the events appended since the last one (from
 * the first call on) and returns (until − at) of each BAN, COOL_DOWN and QUARANTINE. The stream is
 * the pool's, so every replica sees every event: the histogram fed by this is pool-wide.
 */
import type { StoreEvents } from "@proxybroker/sdk/engine";

export type RecoveryKind = "ban" | "cool_down" | "quarantine";

export interface Recovery {
  readonly kind: RecoveryKind;
  readonly seconds: number;
}

const KINDS: Readonly<Record<string, RecoveryKind>> = { BAN: "ban", COOL_DOWN: "cool_down", QUARANTINE: "quarantine" };
const PAGE = 1_000;
/** Pages read per pool per call at most (the stream keeps about 10,000 events). */
const MAX_PAGES = 10;

export class RecoveryTimes {
  private readonly cursors = new Map<string, string>();

  constructor(private readonly store: StoreEvents) {}

  /** The recoveries that began in `pools` since the last call (none on the first call of a pool). */
  async since(pools: readonly string[]): Promise<Recovery[]> {
    const out: Recovery[] = [];
    for (const pool of pools) {
      let cursor = this.cursors.get(pool) ?? "$";
      for (let i = 0; i < MAX_PAGES; i++) {
        const r = await this.store.readEvents(pool, cursor, { count: PAGE, blockMs: 0 });
        cursor = r.cursor;
        for (const e of r.events) {
          const kind = KINDS[e.kind];
          const until = Number(e.detail);
          if (kind !== undefined && Number.isFinite(until) && until > e.at) out.push({ kind, seconds: (until - e.at) / 1000 });
        }
        if (r.events.length < PAGE) break;
      }
      this.cursors.set(pool, cursor);
    }
    return out;
  }
}
