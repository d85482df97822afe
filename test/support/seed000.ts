/**
 * Baseline "seed 000": the design this project started from, as the benchmark and the crawl
 * harness run it beside ProxyBroker. It comes from a write-up of a Scrapy-Redis cluster sharing
 * one proxy pool (docs/baselines.md): workers "borrow" and "give back" proxies straight on Redis,
 * with no broker process.
 *
 * - Pool: a sorted set `proxy:pool:default` of `ip:port` by score; a blacklist set.
 * - Borrow: ZREVRANGE of the top 50 WITHSCORES, then `SET proxy:lock:{ip:port}:{domain} worker
 *   EX 30 NX` per candidate in score order, until one locks (domain = the URL's netloc).
 * - Give back, right after the response: DEL the lock; a success (200/301/302) adds 2 points,
 *   403/429 take 5, anything else 15; a proxy below 10 leaves the pool for the blacklist.
 *
 * What it lacks, and ProxyBroker adds: pacing between requests of one IP, waiting for a free
 * proxy, heartbeats for long downloads, fencing, bans per domain, quarantine.
 */
import type { Redis } from "ioredis";

/** The pool key of seed 000. */
export const SEED000_POOL_KEY = "proxy:pool:default";
const BLACKLIST_KEY = "proxy:blacklist";
const CANDIDATES = 50;
const LOCK_TTL_SECONDS = 30;
const FLOOR = 10;

/** How a use went, in the seed's three classes. */
export type Seed000Result = "success" | "soft" | "hard";

const DELTA: Readonly<Record<Seed000Result, number>> = { success: 2, soft: -5, hard: -15 };

/** The seed's borrow / give-back on one ioredis connection (shared by every loop of a process). */
export class Seed000 {
  constructor(private readonly redis: Redis) {}

  /** The first of the top 50 that this worker could lock for `domain`, or undefined. */
  async borrow(domain: string, workerId: string): Promise<string | undefined> {
    const flat = await this.redis.zrevrange(SEED000_POOL_KEY, 0, CANDIDATES - 1, "WITHSCORES");
    for (let i = 0; i < flat.length; i += 2) {
      const addr = flat[i] ?? "";
      const locked = await this.redis.set(lockKey(addr, domain), workerId, "EX", LOCK_TTL_SECONDS, "NX");
      if (locked === "OK") return addr;
    }
    return undefined;
  }

  /**
   * Release the lock and score the use. The seed sends DEL and ZINCRBY one after the other; here
   * both go out at once on the same connection (same order, one round trip fewer). A failure
   * then reads the score and blacklists the proxy below the floor.
   */
  async giveBack(addr: string, domain: string, result: Seed000Result = "success"): Promise<void> {
    const [, score] = await Promise.all([this.redis.del(lockKey(addr, domain)), this.redis.zincrby(SEED000_POOL_KEY, DELTA[result], addr)]);
    if (result !== "success" && Number(score) < FLOOR) {
      await this.redis.zrem(SEED000_POOL_KEY, addr);
      await this.redis.sadd(BLACKLIST_KEY, addr);
    }
  }
}

function lockKey(addr: string, domain: string): string {
  return `proxy:lock:${addr}:${domain}`;
}
