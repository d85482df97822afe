/**
 * Strategy "seed003": seed 003's Redis broker. Candidates: SMEMBERS `proxy:pool`, shuffled, the
 * first 20; skip those with `proxy:banned:{proxy}`; lock the proxy itself (not per domain) with
 * SET `proxy:lock:{proxy}` NX EX 30. A 403 or 429 (or a request error) marks the proxy banned for
 * 3600 s and removes it from the pool; otherwise the lock is released. Whatever is not 403/429 is
 * returned to the caller, who takes a 200 for the page.
 */
import { Redis } from "ioredis";
import { getViaProxy, runWorker } from "./common.js";
import type { Attempt } from "./common.js";
import { SEED003_POOL_KEY } from "./keys.js";

const LOCK_PREFIX = "proxy:lock:";
const BANNED_PREFIX = "proxy:banned:";
const LOCK_TTL_S = 30;
const BAN_TTL_S = 3600;
const MAX_ATTEMPTS = 20;

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    const a = items[i] as T;
    items[i] = items[j] as T;
    items[j] = a;
  }
  return items;
}

runWorker(async (config) => {
  const r = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 });

  const getFreeProxy = async (): Promise<string | undefined> => {
    const candidates = shuffle(await r.smembers(SEED003_POOL_KEY));
    for (const proxy of candidates.slice(0, MAX_ATTEMPTS)) {
      if ((await r.exists(BANNED_PREFIX + proxy)) > 0) continue;
      if ((await r.set(LOCK_PREFIX + proxy, config.workerId, "EX", LOCK_TTL_S, "NX")) === "OK") return proxy;
    }
    return undefined;
  };

  const markBanned = async (proxy: string): Promise<void> => {
    await r.set(BANNED_PREFIX + proxy, "1", "EX", BAN_TTL_S);
    await r.del(LOCK_PREFIX + proxy);
    await r.srem(SEED003_POOL_KEY, proxy);
  };

  const attempt = async (url: string): Promise<Attempt> => {
    const proxy = await getFreeProxy();
    if (proxy === undefined) return { kind: "no-proxy" };
    try {
      const res = await getViaProxy(proxy, url, config.timeoutMs);
      if (res.status === 403 || res.status === 429) await markBanned(proxy);
      else await r.del(LOCK_PREFIX + proxy);
      return { kind: "fetched", proxy, status: res.status, body: res.body, accepted: res.status === 200 };
    } catch {
      await markBanned(proxy);
      return { kind: "fetched", proxy, status: 0, body: "", accepted: false };
    }
  };
  return { attempt, close: async () => void r.disconnect() };
});
