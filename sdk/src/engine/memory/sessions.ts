/**
 * Internal to the in-memory engine: the sticky session bindings of a pool, with lazy pruning
 * of expired ones.
 */
import type { SessionRecord } from "./records.js";
import { SweepQueue } from "./sweep-queue.js";

/** Session key → bound proxy, each binding expiring on its own. */
export class Sessions {
  private readonly byKey = new Map<string, SessionRecord>();
  private readonly queue = new SweepQueue<SessionRecord>();

  /** The binding of `key` if it has not expired at `now`. */
  live(key: string, now: number): SessionRecord | undefined {
    const session = this.byKey.get(key);
    return session !== undefined && session.expireAt > now ? session : undefined;
  }

  /** Bind `key` to `proxyId` until `expireAt` (a rebind updates the same record). */
  bind(key: string, proxyId: string, expireAt: number): void {
    const session = this.byKey.get(key);
    if (session !== undefined) {
      session.proxyId = proxyId;
      session.expireAt = expireAt;
      return;
    }
    const created: SessionRecord = { key, proxyId, expireAt };
    this.byKey.set(key, created);
    this.queue.push(created);
  }

  /** Look at up to `count` bindings; drop those expired at `now`. */
  sweep(now: number, count: number): void {
    this.queue.sweep(count, (session) => {
      if (session.expireAt > now) return true;
      this.byKey.delete(session.key);
      return false;
    });
  }
}
