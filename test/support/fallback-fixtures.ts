/**
 * What the fallback pool tests share: an acquire request with the defaults the tests assume, and
 * a pool on the given fake clock with seeded randomness.
 */
import { FallbackPool, type FallbackAcquireRequest, type FallbackPoolOptions } from "../../sdk/src/fallback/fallback-pool.js";
import { seededRandom, type FakeClock } from "./fake-clock.js";

/** A plain acquire of `host` in pool "default": no session, tier, labels or wait; `ttlMs` 0 unless given. */
export function fallbackRequest(host: string, over: Partial<FallbackAcquireRequest> = {}): FallbackAcquireRequest {
  return { pool: "default", host, ttlMs: 0, sessionKey: "", tier: "", labels: {}, maxWaitMs: 0, ...over };
}

/** A fallback pool of `o.workerId` on `clock`, its randomness seeded (7). */
export function fallbackPoolOn(clock: () => FakeClock, o: Partial<FallbackPoolOptions> & { workerId: string }): FallbackPool {
  return new FallbackPool({ clock: () => clock().now(), random: seededRandom(7), ...o });
}
