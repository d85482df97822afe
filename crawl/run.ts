/**
 * The crawl harness (`npm run crawl`): starts redis-server, the target sites,
 * N tinyproxies and the broker on loopback, then runs each strategy in turn for CRAWL_SECONDS with
 * the same sites, proxies and page list (Redis FLUSHALL and fresh site state in between), and
 * prints one row per strategy. The ProxyBroker strategy runs a mix of TypeScript SDK workers and
 * Python Scrapy workers (CRAWL_PYTHON_WORKERS, default half) on the same broker and queue.
 * CRAWL_GATE=1: exit 1 when ProxyBroker shows an overlap, a ban or a captcha page taken for
 * content, a worker failed, a language took no page, or a long download overlapped or broke.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Redis } from "ioredis";
import { startRedisServer } from "../test/support/redis-server.js";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { brokerProcess } from "../test/support/broker-process.js";
import { computeRow, formatTable, gateFailures, pagesTaken, theoreticalMaxPerMinute } from "./report.js";
import type { Row } from "./report.js";
import { formatLongDownload, runLongDownload } from "./long-download.js";
import type { LongDownloadResult } from "./long-download.js";
import { startSites } from "./sites.js";
import type { Site, Sites } from "./sites.js";
import { startTinyproxies } from "../test/support/tinyproxies.js";
import { runWorkerGroups } from "./spawn-workers.js";
import { checkPython, pythonWorkerCommand, pythonWorkerCount } from "./python-workers.js";
import type { WorkerConfig } from "./workers/common.js";
import { SEED000_POOL_KEY } from "../test/support/seed000.js";
import { QUEUE_KEY, SEED003_POOL_KEY } from "./workers/keys.js";

const STRATEGIES = ["naive", "seed000", "seed003", "proxybroker"] as const;
type Strategy = (typeof STRATEGIES)[number];

interface HarnessOptions {
  readonly seconds: number;
  readonly sites: number;
  readonly proxies: number;
  readonly minIntervalMs: number;
  readonly workers: number;
  readonly concurrency: number;
  readonly banMs: number;
  readonly strategies: readonly Strategy[];
  readonly gate: boolean;
  /** Run the long-download check (and its control without heartbeats). */
  readonly longDownload: boolean;
  readonly leaseTtlMs: number;
  /** Of `workers`, how many are Python Scrapy workers in the ProxyBroker strategy (and long downloads). */
  readonly pythonWorkers: number;
}

function envInt(name: string, def: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

function readOptions(): HarnessOptions {
  const wanted = (process.env["CRAWL_STRATEGIES"] ?? STRATEGIES.join(",")).split(",").map((s) => s.trim());
  const strategies = wanted.filter((s): s is Strategy => (STRATEGIES as readonly string[]).includes(s));
  if (strategies.length !== wanted.length) throw new Error(`CRAWL_STRATEGIES: known are ${STRATEGIES.join(", ")}`);
  const workers = envInt("CRAWL_WORKERS", 4);
  const longDownload = process.env["CRAWL_LONG"] !== "0";
  return {
    seconds: envInt("CRAWL_SECONDS", 60),
    sites: envInt("CRAWL_SITES", 3),
    proxies: envInt("CRAWL_PROXIES", 4),
    minIntervalMs: envInt("CRAWL_MIN_INTERVAL_MS", 1000),
    workers,
    concurrency: envInt("CRAWL_CONCURRENCY", 4),
    banMs: envInt("CRAWL_BAN_SECONDS", 120) * 1000,
    strategies,
    gate: process.env["CRAWL_GATE"] === "1",
    longDownload,
    leaseTtlMs: envInt("CRAWL_LEASE_TTL_MS", 2000),
    pythonWorkers: strategies.includes("proxybroker") || longDownload ? pythonWorkerCount(workers) : 0,
  };
}

const WORKER_BOOT_MS = 4_000;
const REQUEST_TIMEOUT_MS = 10_000;

/** The page list: `perSite` pages of every site, interleaved. */
async function fillQueue(redis: Redis, sites: readonly Site[], perSite: number): Promise<void> {
  const urls: string[] = [];
  for (let n = 1; n <= perSite; n++) for (const s of sites) urls.push(`${s.origin}/page/${n}`);
  for (let i = 0; i < urls.length; i += 1000) await redis.rpush(QUEUE_KEY, ...urls.slice(i, i + 1000));
}

interface Env {
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly sites: Sites;
  readonly proxies: readonly string[];
  readonly admin: ClientOf<typeof ProxyAdmin>;
  readonly brokerAddress: string;
  readonly options: HarnessOptions;
}

async function setUp(env: Env, strategy: Strategy): Promise<void> {
  const { redis, proxies } = env;
  if (strategy === "seed000") await redis.zadd(SEED000_POOL_KEY, ...proxies.flatMap((p) => [50, p]));
  if (strategy === "seed003") await redis.sadd(SEED003_POOL_KEY, ...proxies);
  if (strategy === "proxybroker") {
    const r = await env.admin.addProxies({ pool: "default", proxies: proxies.map((p) => ({ url: `http://${p}`, tier: "", labels: {} })) });
    if (r.rejected.length > 0) throw new Error(`broker rejected proxies: ${r.rejected.map((x) => x.reason).join("; ")}`);
    for (const site of env.sites.sites) {
      await env.admin.setDomainPolicy({ policy: { pattern: site.host.split(":")[0] ?? "", minInterval: durationFromMs(env.options.minIntervalMs) } });
    }
  }
}

/** One strategy's result: its row, and per worker language the pages it took (ProxyBroker's mix). */
interface StrategyResult {
  readonly row: Row;
  readonly languages: ReadonlyArray<{ readonly label: string; readonly workers: number; readonly pages: number }>;
}

async function runStrategy(env: Env, strategy: Strategy): Promise<StrategyResult> {
  const { options } = env;
  await env.redis.flushall();
  env.sites.reset();
  await setUp(env, strategy);
  const maxPerSite = Math.ceil((theoreticalMaxPerMinute(options.proxies, 1, options.minIntervalMs) * options.seconds) / 60);
  await fillQueue(env.redis, env.sites.sites, maxPerSite * 3 + 100);
  const startAt = Date.now() + WORKER_BOOT_MS;
  const endAt = startAt + options.seconds * 1000;
  const config = (id: string): WorkerConfig => ({
    workerId: id,
    redisUrl: env.redisUrl,
    queueKey: QUEUE_KEY,
    proxies: env.proxies,
    brokerAddress: env.brokerAddress,
    startAt,
    endAt,
    concurrency: options.concurrency,
    timeoutMs: REQUEST_TIMEOUT_MS,
    retryDelayMs: 100,
  });
  const python = strategy === "proxybroker" ? options.pythonWorkers : 0;
  const killAt = endAt + REQUEST_TIMEOUT_MS + 15_000;
  const { all: run, groups } = await runWorkerGroups([
    { label: "TypeScript", entry: strategy, count: options.workers - python, killAt, config: (i) => config(python > 0 ? `${strategy}-ts-${i}` : `${strategy}-${i}`) },
    { label: "Python Scrapy", entry: strategy, command: pythonWorkerCommand(), count: python, killAt, config: (i) => config(`${strategy}-py-${i}`) },
  ]);
  const logDir = process.env["CRAWL_LOG_DIR"];
  if (logDir !== undefined && logDir !== "") {
    await mkdir(logDir, { recursive: true });
    await writeFile(join(logDir, `${strategy}.sites.json`), JSON.stringify(env.sites.log));
    await writeFile(join(logDir, `${strategy}.reports.json`), JSON.stringify(run.reports));
  }
  const row = computeRow({
    strategy,
    label: python > 0 ? `${strategy} (${options.workers - python} TS + ${python} Py)` : strategy,
    reports: run.reports,
    log: env.sites.log,
    counters: env.sites.counters(),
    startAt,
    endAt,
    proxies: options.proxies,
    sites: options.sites,
    minIntervalMs: options.minIntervalMs,
    workerFailures: run.failures,
  });
  const languages = groups.filter((g) => g.count > 0).map((g) => ({ label: g.label, workers: g.count, pages: pagesTaken(g.reports, endAt) }));
  return { row, languages };
}

async function main(): Promise<number> {
  const options = readOptions();
  if (options.pythonWorkers > 0) checkPython();
  const redisServer = await startRedisServer();
  const redis = new Redis(redisServer.url);
  const sites = await startSites({
    count: options.sites,
    minIntervalMs: options.minIntervalMs,
    toleranceMs: Math.round(options.minIntervalMs * 0.05),
    violationsToBan: 3,
    violationWindowMs: 60_000,
    banMs: options.banMs,
    pageDelayMs: [100, 200],
  });
  const tiny = await startTinyproxies({ count: options.proxies });
  const broker = await brokerProcess({ redisUrl: redisServer.url });
  const killBroker = (): void => void broker.kill();
  process.once("exit", killBroker);
  await broker.start();
  const channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
  const env: Env = {
    redis,
    redisUrl: redisServer.url,
    sites,
    proxies: tiny.proxies.map((p) => p.address),
    admin: createClient(ProxyAdmin, channel),
    brokerAddress: broker.address,
    options,
  };
  const rows: Row[] = [];
  const mixes: string[] = [];
  const mixFailures: string[] = [];
  const long: LongDownloadResult[] = [];
  try {
    process.stderr.write(
      `crawl: S=${options.sites} sites, N=${options.proxies} proxies, min_interval ${options.minIntervalMs} ms, ${options.workers} workers × ${options.concurrency}, ${options.seconds} s per strategy\n`,
    );
    for (const strategy of options.strategies) {
      const { row, languages } = await runStrategy(env, strategy);
      if (languages.length > 1) {
        mixes.push(`${row.strategy} workers: ${languages.map((l) => `${l.label} ${l.workers} × ${options.concurrency} → ${l.pages} pages`).join(", ")}`);
        for (const l of languages) if (l.pages === 0) mixFailures.push(`the ${l.label} workers took no page`);
      }
      process.stderr.write(`crawl: ${strategy} done (${row.pages} pages)\n`);
      rows.push(row);
    }
    if (options.longDownload) {
      for (const heartbeat of [true, false]) {
        long.push(await runLongDownload({ ...env, minIntervalMs: options.minIntervalMs, leaseTtlMs: options.leaseTtlMs, heartbeat, python: options.pythonWorkers > 0 }));
        process.stderr.write(`crawl: long download (heartbeat ${String(heartbeat)}) done\n`);
      }
    }
  } finally {
    channel.close();
    await broker.stop();
    process.removeListener("exit", killBroker);
    await tiny.stop();
    await sites.close();
    redis.disconnect();
    await redisServer.stop();
  }
  const max = theoreticalMaxPerMinute(options.proxies, options.sites, options.minIntervalMs);
  process.stdout.write(
    `S=${options.sites} sites, N=${options.proxies} proxies, min_interval ${options.minIntervalMs} ms, ${options.workers} workers × ${options.concurrency} concurrent, ${options.seconds} s each; theoretical max ${max.toFixed(0)} pages/min\n\n${formatTable(rows)}\n${mixes.map((m) => `\n${m}`).join("")}${mixes.length > 0 ? "\n" : ""}${long.map((r) => `\n${formatLongDownload(r, options.leaseTtlMs)}`).join("")}\n`,
  );
  const pb = rows.find((r) => r.strategy === "proxybroker");
  if (options.gate) {
    const why = pb === undefined ? [] : [...gateFailures(pb), ...mixFailures];
    const lh = long.find((r) => r.heartbeat);
    if (lh !== undefined && (lh.overlaps > 0 || lh.streamsComplete < lh.streams)) why.push(`long downloads: ${lh.overlaps} overlaps, ${lh.streamsComplete}/${lh.streams} complete`);
    if (why.length > 0) {
      process.stdout.write(`\nCRAWL_GATE: ProxyBroker failed: ${why.join(", ")}\n`);
      return 1;
    }
  }
  return 0;
}

// Ctrl-C / SIGTERM: exit, so the exit hooks kill redis-server, the tinyproxies and the broker.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`crawl: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
