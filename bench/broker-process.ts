/**
 * The broker as the benchmark runs it: its own process (`node --import tsx bench/broker-process.ts`),
 * on the Redis at BENCH_REDIS_URL, with the production defaults of every other setting and one
 * Redis connection. Prints `{"port":N}` on stdout once it serves; drains and exits on SIGTERM (so
 * that `--cpu-prof` can write its profile).
 */
import { loadSettings } from "../src/config/settings.js";
import { BrokerServer } from "../src/server/broker-server.js";
import { RedisStore, createRedisClient } from "../src/store/redis/index.js";

async function main(): Promise<void> {
  const redisUrl = process.env["BENCH_REDIS_URL"];
  if (redisUrl === undefined || redisUrl === "") throw new Error("BENCH_REDIS_URL is not set");
  const settings = loadSettings({ LISTEN_ADDRESS: "127.0.0.1:0", REDIS_URL: redisUrl });
  const client = createRedisClient({ url: settings.redisUrl, commandTimeoutMs: settings.redisCommandTimeoutMs });
  const store = new RedisStore({ client, scoring: settings.scoring, prefix: settings.redisKeyPrefix });
  const server = await BrokerServer.start({ store, settings });
  process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);

  let stopping = false;
  process.on("SIGTERM", () => {
    if (stopping) return;
    stopping = true;
    void (async () => {
      await server.shutdown(1_000);
      await store.close().catch(() => undefined);
      process.exit(0);
    })();
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`bench broker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
