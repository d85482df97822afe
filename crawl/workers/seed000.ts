/**
 * Strategy "seed000": seed 000's distributed middleware, straight on Redis. Borrow: ZREVRANGE the
 * top 50 of `proxy:pool:default` by score, take the first whose lock `proxy:lock:{ip:port}:{domain}`
 * (domain = netloc) SET NX EX 30 succeeds. Return right after the response: DEL the lock; 200/301/302
 * +2, 403/429 −5, anything else (and exceptions) −15; below 10 the proxy leaves the pool for the
 * blacklist. A 200/301/302 is taken for the page.
 */
import { Redis } from "ioredis";
import { getViaProxy, runWorker } from "./common.js";
import type { Attempt } from "./common.js";
import { SEED000_POOL_KEY } from "./keys.js";

const LOCK_TTL_S = 30;
const CANDIDATES = 50;

runWorker(async (config) => {
  const rdb = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 });

  const borrow = async (domain: string): Promise<string | undefined> => {
    const candidates = await rdb.zrevrange(SEED000_POOL_KEY, 0, CANDIDATES - 1);
    for (const addr of candidates) {
      if ((await rdb.set(`proxy:lock:${addr}:${domain}`, config.workerId, "EX", LOCK_TTL_S, "NX")) === "OK") return addr;
    }
    return undefined;
  };

  const giveBack = async (addr: string, domain: string, result: "success" | "soft" | "hard"): Promise<void> => {
    await rdb.del(`proxy:lock:${addr}:${domain}`);
    if (result === "success") {
      await rdb.zincrby(SEED000_POOL_KEY, 2, addr);
      return;
    }
    await rdb.zincrby(SEED000_POOL_KEY, result === "soft" ? -5 : -15, addr);
    const score = await rdb.zscore(SEED000_POOL_KEY, addr);
    if (score !== null && Number(score) < 10) {
      await rdb.zrem(SEED000_POOL_KEY, addr);
      await rdb.sadd("proxy:blacklist", addr);
    }
  };

  const attempt = async (url: string): Promise<Attempt> => {
    const domain = new URL(url).host;
    const proxy = await borrow(domain);
    if (proxy === undefined) return { kind: "no-proxy" };
    try {
      const r = await getViaProxy(proxy, url, config.timeoutMs);
      const ok = r.status === 200 || r.status === 301 || r.status === 302;
      await giveBack(proxy, domain, ok ? "success" : r.status === 403 || r.status === 429 ? "soft" : "hard");
      return { kind: "fetched", proxy, status: r.status, body: r.body, accepted: ok };
    } catch {
      await giveBack(proxy, domain, "hard");
      return { kind: "fetched", proxy, status: 0, body: "", accepted: false };
    }
  };
  return { attempt, close: async () => void rdb.disconnect() };
});
