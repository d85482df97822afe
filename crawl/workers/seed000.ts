/**
 * Strategy "seed000": seed 000's distributed middleware, straight on Redis
 * (test/support/seed000.ts). A 200/301/302 is taken for the page.
 */
import { Redis } from "ioredis";
import { Seed000 } from "../../test/support/seed000.js";
import { getViaProxy, runWorker } from "./common.js";
import type { Attempt } from "./common.js";

runWorker(async (config) => {
  const rdb = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 });
  const seed = new Seed000(rdb);

  const attempt = async (url: string): Promise<Attempt> => {
    const domain = new URL(url).host;
    const proxy = await seed.borrow(domain, config.workerId);
    if (proxy === undefined) return { kind: "no-proxy" };
    try {
      const r = await getViaProxy(proxy, url, config.timeoutMs);
      const ok = r.status === 200 || r.status === 301 || r.status === 302;
      await seed.giveBack(proxy, domain, ok ? "success" : r.status === 403 || r.status === 429 ? "soft" : "hard");
      return { kind: "fetched", proxy, status: r.status, body: r.body, accepted: ok };
    } catch {
      await seed.giveBack(proxy, domain, "hard");
      return { kind: "fetched", proxy, status: 0, body: "", accepted: false };
    }
  };
  return { attempt, close: async () => void rdb.disconnect() };
});
