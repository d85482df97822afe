/**
 * A source refresh of 10,000 proxies, measured: `npm run bench:sources`.
 *
 * A real redis-server, the Redis store, and a list server on loopback answering 10,000 lines.
 * Refreshes, each timed, with this process's RSS and heap after it (and the peak RSS, sampled
 * every 10 ms while it runs):
 * 1. first: all 10,000 are new and added;
 * 2. unchanged: the same list again (fetch, parse, compare; nothing written);
 * 3. churn: 1,000 vanished (removed) and 1,000 new (added).
 * PROXIES (default 10000) changes the size.
 */
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import type { SourceSpec, SourceView } from "@proxybroker/sdk/model";
import { SourceRefresher } from "../src/health/sources/refresh.js";
import { headersReader } from "../src/health/sources/headers.js";
import type { RefreshOutcome } from "../src/health/sources/refresh.js";
import { createRedisClient, RedisStore } from "../src/store/redis/index.js";
import { proxyLines, startListServer } from "../test/support/list-server.js";
import { startRedisServer } from "../test/support/redis-server.js";

const N = Number(process.env["PROXIES"] ?? "10000");
const MB = 1024 * 1024;

async function main(): Promise<void> {
  const redis = await startRedisServer();
  const list = await startListServer();
  const store = new RedisStore({ client: createRedisClient({ url: redis.url }), scoring: DEFAULT_SCORING });
  try {
    const spec: SourceSpec = {
      id: "bench",
      pool: "bench",
      url: list.url,
      format: "lines",
      jsonPath: "",
      headersFile: "",
      intervalMs: 300_000,
      tier: "",
      labels: {},
      createdAt: Date.now(),
    };
    await store.putSource(spec);
    const refresher = new SourceRefresher({
      store,
      maxShrink: 0.5,
      fetchTimeoutMs: 30_000,
      maxBytes: 64 * MB,
      readHeaders: headersReader(""),
    });
    const view = async (): Promise<SourceView> => {
      const s = (await store.listSources(spec.pool))[0];
      if (s === undefined) throw new Error("the source is gone");
      return s;
    };
    const rss0 = process.memoryUsage().rss;
    console.log(`source refresh of ${N} proxies (lines, Redis store on loopback); RSS before: ${(rss0 / MB).toFixed(0)} MB`);
    const steps: [string, string][] = [
      ["first (all new)", proxyLines(N)],
      ["unchanged", proxyLines(N)],
      [`churn (${N / 10} gone, ${N / 10} new)`, proxyLines(N, N / 10)],
    ];
    for (const [name, body] of steps) {
      list.answer(200, body);
      let peak = process.memoryUsage().rss;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
      const started = performance.now();
      const o: RefreshOutcome = await refresher.refresh(await view());
      const ms = performance.now() - started;
      clearInterval(sampler);
      const m = process.memoryUsage();
      peak = Math.max(peak, m.rss);
      console.log(
        `${name.padEnd(28)} ${o.result} ${ms.toFixed(0).padStart(6)} ms  listed ${o.listed}, +${o.added.length} −${o.removed.length}  RSS ${(m.rss / MB).toFixed(0)} MB (peak ${(peak / MB).toFixed(0)} MB), heap ${(m.heapUsed / MB).toFixed(0)} MB`,
      );
    }
    const stats = await store.poolStats(spec.pool, 0);
    console.log(`pool afterwards: ${stats.total} proxies`);
  } finally {
    await store.close();
    await list.close();
    await redis.stop();
  }
}

await main();
