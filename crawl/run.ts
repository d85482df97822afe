/**
 * The crawl harness (`npm run crawl`): starts redis-server, the target sites and N tinyproxies on
 * loopback (and a fresh broker for each ProxyBroker phase), then runs each strategy in turn for CRAWL_SECONDS with the same sites,
 * proxies and page lists (Redis FLUSHALL and fresh site state in between), and prints one row per
 * strategy and, for ProxyBroker, one row per site. The sites are strict: zero tolerance by
 * default, fast pages; CRAWL_SITES of them get their rule as a domain policy, CRAWL_FREE_SITES
 * get none (adaptive pacing must learn their rule). The ProxyBroker strategy runs a mix of
 * TypeScript SDK workers and Python Scrapy workers (CRAWL_PYTHON_WORKERS, default half) on the
 * same broker and queues. CRAWL_GATE=1: exit 1 when ProxyBroker shows an overlap, a ban, a 429 on
 * a site with a policy, more than CRAWL_FREE_MAX_429 on a site without, a captcha page taken for
 * content, a site without pages, a worker that failed, a language that took no page, or a long
 * download that overlapped or broke. CRAWL_ISOLATION=<group>: the sites with a policy share that
 * isolation group (CRAWL_AFFINITY_MS its affinity window), and the sites' logs are checked for one
 * proxy IP inside two of them at once (and for moves sooner than the window); the gate fails
 * ProxyBroker's strategies on either. CRAWL_PARTITION_AT_S=<s>: one proxybroker worker reaches the
 * broker through a relay that goes silent s seconds into the window (partition-relay.ts); a
 * partition timeline follows, and the gate also fails on a second without a page.
 * CRAWL_HTTPS=tunnel|intercept: the sites serve HTTPS (a test CA's certificate) and the gateway
 * strategy crawls them through CONNECT, its gateway relaying the tunnels or intercepting them.
 * CRAWL_SCENARIO=provider: the proxies are a simulated provider's sessions (CRAWL_PROVIDER_MODE
 * username or ports) over fewer exit IPs; the sites' figures are also shown per exit, efficiency
 * is measured against the exits, and the gate judges ProxyBroker's strategies per exit.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { recordsLine } from "./records-line.js";
import { durationFromMs, durationMs } from "@bufbuild/protobuf/wkt";
import { Redis } from "ioredis";
import { startRedisServer } from "../test/support/redis-server.js";
import { PacingMode } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { startPhaseBroker, type PhaseBroker } from "./phase-broker.js";
import { startGatewayProcess } from "./gateway-process.js";
import type { GatewayProcess, GatewayProcessOptions } from "./gateway-process.js";
import { computeRow, computeSiteRows, formatSiteTable, formatTable, gateFailures, pagesTaken, theoreticalMaxPerMinute } from "./report.js";
import { formatOutage, outageTimeline, type OutageTimeline } from "./outage.js";
import { banTimes } from "./bans.js";
import { partitionTimeline } from "./partition.js";
import type { PartitionTimeline } from "./partition.js";
import { checkPartition, describePartition, readPartition } from "./partition-options.js";
import type { PartitionOptions } from "./partition-options.js";
import { formatPartition, partitionGateFailures } from "./partition-report.js";
import { startPartitionRelay } from "./partition-relay.js";
import type { PartitionRelay } from "./partition-relay.js";
import type { Row, SiteRow } from "./report.js";
import { formatLongDownload, runLongDownload } from "./long-download.js";
import type { LongDownloadResult } from "./long-download.js";
import { checkIsolation } from "./isolation-check.js";
import { describeIsolation, isolationPolicyFields, readIsolation } from "./isolation-options.js";
import type { IsolationOptions } from "./isolation-options.js";
import { formatIsolation, isolationGateFailures, isolationRecord } from "./isolation-report.js";
import type { IsolationRow } from "./isolation-report.js";
import { checkHttpsStrategies, describeHttps, gatewayGated, readHttpsMode } from "./https-mode.js";
import type { HttpsMode } from "./https-mode.js";
import { makeSiteCerts } from "./site-certs.js";
import type { SiteCerts } from "./site-certs.js";
import { siteAddress, startSites } from "./sites.js";
import type { Site, SiteRules, Sites } from "./sites.js";
import { startProxySupply } from "./proxy-supply.js";
import type { ProxySupply } from "./proxy-supply.js";
import type { ProviderSim } from "../test/support/provider-sim.js";
import { describeProvider, readProvider } from "./provider-options.js";
import type { ProviderScenario } from "./provider-options.js";
import { computeExitRows, exitGateFailures, formatExitTable } from "./exit-report.js";
import type { ExitRow } from "./exit-report.js";
import { runWorkerGroups } from "./spawn-workers.js";
import { checkPython, pythonWorkerCommand, pythonWorkerCount } from "./python-workers.js";
import {
  checkGatewayClient,
  describeGatewayClient,
  gatewayClientCommand,
  gatewayClientLabel,
  readGatewayClient,
} from "./gateway-client.js";
import type { GatewayClient } from "./gateway-client.js";
import type { WorkerConfig } from "./workers/common.js";
import { SEED000_POOL_KEY } from "../test/support/seed000.js";
import { QUEUE_KEY, SEED003_POOL_KEY } from "./workers/keys.js";

/** "gateway": crawlers that know nothing of ProxyBroker and only set its gateway as their proxy. */
const STRATEGIES = ["naive", "seed000", "seed003", "proxybroker", "gateway"] as const;

/** The files this run wrote (with CRAWL_LOG_DIR), printed at its end. */
const written: string[] = [];
type Strategy = (typeof STRATEGIES)[number];

interface HarnessOptions {
  readonly seconds: number;
  /** Sites whose rule the broker gets as a domain policy … */
  readonly sites: number;
  /** … and sites it knows nothing about. */
  readonly freeSites: number;
  readonly proxies: number;
  /** The rule (and policy) of the configured sites. */
  readonly minIntervalMs: number;
  /** The rule of the sites without a policy. */
  readonly freeIntervalMs: number;
  /** How much earlier than the rule a site still accepts a request (0: none). */
  readonly toleranceMs: number;
  /** Server time of a page, ms: uniform in [lo, hi]. */
  readonly pageMs: readonly [number, number];
  /** 429s a site without a policy may answer before adaptive pacing learned its rule. */
  readonly maxFree429: number;
  /** The configured sites' policy: what min_interval is measured from, and its jitter. */
  readonly pacing: "release" | "grant";
  readonly jitterMs: number;
  readonly workers: number;
  readonly concurrency: number;
  /**
   * Which sites a worker crawls (CRAWL_SHAPE): "spread" (default) — its loops over every site;
   * "site" — worker w crawls site w mod the number of sites only (a spider per site).
   */
  readonly shape: "spread" | "site";
  readonly banMs: number;
  readonly strategies: readonly Strategy[];
  readonly gate: boolean;
  /** Run the long-download check (and its control without heartbeats). */
  readonly longDownload: boolean;
  /** ProxyBroker under a crash: SIGKILL the broker this long into the window (0: never) … */
  readonly killAtMs: number;
  /** … and start it again on the same address this long after. */
  readonly restartAfterMs: number;
  readonly leaseTtlMs: number;
  /** Of `workers`, how many are Python Scrapy workers in the ProxyBroker strategy (and long downloads). */
  readonly pythonWorkers: number;
  /**
   * A mixed fleet (CRAWL_GATEWAY_WORKERS): this many gateway clients (workers/gateway.ts, through one
   * gateway process in front of the same broker) crawl beside the ProxyBroker strategy's workers.
   */
  readonly gatewayWorkers: number;
  /** The isolation group of the sites with a policy (ProxyBroker's strategies), or none. */
  readonly isolation: IsolationOptions | undefined;
  /** ProxyBroker under a partition: one worker cut off the broker (CRAWL_PARTITION_AT_S), or none. */
  readonly partition: PartitionOptions | undefined;
  /** HTTPS sites, and the gateway's mode for them (CRAWL_HTTPS), or plain HTTP ("off"). */
  readonly https: HttpsMode;
  /** The gateway's clients (CRAWL_GATEWAY_CLIENT) and their HTTPS connections (CRAWL_HTTPS_CONNECTIONS). */
  readonly gatewayClient: GatewayClient;
  /** The provider scenario (CRAWL_SCENARIO=provider): sessions over fewer exits instead of tinyproxies. */
  readonly provider: ProviderScenario | undefined;
}

function envInt(name: string, def: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

function envCount(name: string, def: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be an integer ≥ 0, got "${raw}"`);
  return n;
}

/** `lo-hi` in ms, or `fast` (2–8 ms, the default) / `slow` (100–200 ms). */
function pageTimes(raw: string | undefined): readonly [number, number] {
  if (raw === undefined || raw === "" || raw === "fast") return [2, 8];
  if (raw === "slow") return [100, 200];
  const m = /^(\d+)-(\d+)$/.exec(raw);
  if (!m || Number(m[1]) > Number(m[2])) throw new Error(`CRAWL_PAGE_MS must be fast, slow or lo-hi in ms, got "${raw}"`);
  return [Number(m[1]), Number(m[2])];
}

function readOptions(): HarnessOptions {
  const wanted = (process.env["CRAWL_STRATEGIES"] ?? STRATEGIES.join(",")).split(",").map((s) => s.trim());
  const strategies = wanted.filter((s): s is Strategy => (STRATEGIES as readonly string[]).includes(s));
  if (strategies.length !== wanted.length) throw new Error(`CRAWL_STRATEGIES: known are ${STRATEGIES.join(", ")}`);
  const workers = envInt("CRAWL_WORKERS", 4);
  const https = readHttpsMode();
  checkHttpsStrategies(https, strategies);
  const provider = readProvider();
  // the long-download check's workers speak plain HTTP, through tinyproxies
  const longDownload = process.env["CRAWL_LONG"] !== "0" && https === "off" && provider === undefined;
  const proxies = envInt("CRAWL_PROXIES", 6);
  const options: HarnessOptions = {
    seconds: envInt("CRAWL_SECONDS", 60),
    sites: envInt("CRAWL_SITES", 3),
    freeSites: envCount("CRAWL_FREE_SITES", provider === undefined ? 1 : 0),
    proxies,
    minIntervalMs: envInt("CRAWL_MIN_INTERVAL_MS", 300),
    freeIntervalMs: envInt("CRAWL_FREE_INTERVAL_MS", 500),
    toleranceMs: envCount("CRAWL_TOLERANCE_MS", 0),
    pageMs: pageTimes(process.env["CRAWL_PAGE_MS"]),
    maxFree429: envCount("CRAWL_FREE_MAX_429", 2 * proxies),
    pacing: process.env["CRAWL_PACING"] === "grant" ? "grant" : "release",
    jitterMs: envCount("CRAWL_JITTER_MS", 0),
    workers,
    concurrency: envInt("CRAWL_CONCURRENCY", 4),
    shape: shapeOf(process.env["CRAWL_SHAPE"]),
    banMs: envInt("CRAWL_BAN_SECONDS", 20) * 1000,
    strategies,
    gate: process.env["CRAWL_GATE"] === "1",
    longDownload,
    leaseTtlMs: envInt("CRAWL_LEASE_TTL_MS", 2000),
    killAtMs: envCount("CRAWL_KILL_AT_S", 0) * 1000,
    restartAfterMs: envCount("CRAWL_RESTART_AFTER_S", 8) * 1000,
    pythonWorkers: strategies.includes("proxybroker") || longDownload ? pythonWorkerCount(workers) : 0,
    gatewayWorkers: envCount("CRAWL_GATEWAY_WORKERS", 0),
    isolation: readIsolation(),
    partition: readPartition(),
    https,
    gatewayClient: readGatewayClient(),
    provider,
  };
  if (options.partition !== undefined)
    checkPartition(options.partition, {
      seconds: options.seconds,
      workers,
      pythonWorkers: options.pythonWorkers,
      proxybroker: strategies.includes("proxybroker"),
      crash: options.killAtMs > 0,
    });
  return options;
}

/** The broker's pacing of every site, sampled every 100 ms through the window. */
async function samplePacing(env: Env, pb: PhaseBroker, endAt: number, startAt: number): Promise<PacingSample[]> {
  const samples: PacingSample[] = [];
  const domains = env.sites.sites.map((s) => s.host.split(":")[0] ?? "");
  while (Date.now() < endAt) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      const r = await pb.admin.getDomainPacing({ pool: "default", domains });
      for (const d of r.domains) {
        samples.push({
          t: Date.now() - startAt,
          domain: d.domain,
          effectiveMs: d.effectiveInterval ? durationMs(d.effectiveInterval) : 0,
          learnedMs: d.learnedLimit ? durationMs(d.learnedLimit) : 0,
        });
      }
    } catch {
      // the broker may be restarting (chaos modes); the next sample will tell
    }
  }
  return samples;
}

/** The broker's pacing of one domain at one moment (ms into the window). */
export interface PacingSample {
  readonly t: number;
  readonly domain: string;
  readonly effectiveMs: number;
  readonly learnedMs: number;
}

/** One line saying what ran. */
function describe(o: HarnessOptions): string {
  const free = o.freeSites > 0 ? ` + ${o.freeSites} without policy (rule ${o.freeIntervalMs} ms)` : "";
  const policy = `min_interval ${o.minIntervalMs} ms after ${o.pacing}${o.jitterMs > 0 ? ` + jitter ≤ ${o.jitterMs} ms` : ""}`;
  const iso = o.isolation === undefined ? "" : ` (${describeIsolation(o.isolation)})`;
  const partition = o.partition === undefined ? "" : `, ${describePartition(o.partition)}`;
  const mixed = o.gatewayWorkers > 0 ? ` (proxybroker: + ${o.gatewayWorkers} gateway clients, a mixed fleet)` : "";
  const https = o.https === "off" ? "" : `${describeHttps(o.https)}: `;
  const proxies = o.provider === undefined ? `N=${o.proxies} proxies` : describeProvider(o.provider);
  const gatewayClients =
    o.strategies.includes("gateway") || o.gatewayWorkers > 0 ? `, ${describeGatewayClient(o.gatewayClient, o.https !== "off")}` : "";
  return `${https}S=${o.sites} sites with policy ${policy}${iso}${free}, tolerance ${o.toleranceMs} ms, pages ${o.pageMs[0]}–${o.pageMs[1]} ms, ${proxies}, ${o.workers} workers × ${o.concurrency} concurrent${mixed}${gatewayClients}${partition}`;
}

const WORKER_BOOT_MS = 4_000;
const REQUEST_TIMEOUT_MS = 10_000;

/** The page queue of site i. */
function queueOf(i: number): string {
  return `${QUEUE_KEY}:${i}`;
}

/** The page lists: `perSite` pages of every site, one queue per site. */
async function fillQueues(redis: Redis, sites: readonly Site[], perSite: number): Promise<void> {
  for (const [i, s] of sites.entries()) {
    const urls = Array.from({ length: perSite }, (_, n) => `${s.origin}/page/${n + 1}`);
    for (let j = 0; j < urls.length; j += 1000) await redis.rpush(queueOf(i), ...urls.slice(j, j + 1000));
  }
}

/** Worker `w`'s queues, rotated so that the loops of all workers spread evenly over the sites. */
function queuesFor(w: number, concurrency: number, sites: number, shape: HarnessOptions["shape"]): string[] {
  if (shape === "site") return [queueOf(w % sites)];
  return Array.from({ length: sites }, (_, k) => queueOf((w * concurrency + k) % sites));
}

function shapeOf(raw: string | undefined): HarnessOptions["shape"] {
  if (raw === undefined || raw === "" || raw === "spread") return "spread";
  if (raw === "site") return "site";
  throw new Error(`CRAWL_SHAPE must be spread or site, got "${raw}"`);
}

/** Whether the broker gets site `i`'s rule as a policy (the first CRAWL_SITES do). */
function configured(options: HarnessOptions, i: number): boolean {
  return i < options.sites;
}

/** The hosts (as the sites log them) of the sites with a policy: the isolation group's. */
function groupSites(env: Env): string[] {
  return env.sites.sites.filter((_, i) => configured(env.options, i)).map((s) => s.host);
}

interface Env {
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly sites: Sites;
  readonly proxies: readonly string[];
  /** Distinct client IPs behind `proxies` (N tinyproxies, or the provider's exits): the theoretical maximum's. */
  readonly capacity: number;
  /** The provider scenario's simulator and echo site. */
  readonly provider: ProxySupply["provider"];
  readonly options: HarnessOptions;
  /** The HTTPS mode's test CA (and the sites' certificate); undefined for plain HTTP. */
  readonly certs: SiteCerts | undefined;
}

/** When the broker was killed and when it listened again (epoch ms). */
interface Crash {
  readonly killedAt: number;
  readonly listeningAt: number;
}

/** SIGKILL the broker at `killAt`, start it again `restartAfterMs` later on the same address. */
async function crashBroker(pb: PhaseBroker, killAt: number, restartAfterMs: number): Promise<Crash> {
  await new Promise((r) => setTimeout(r, Math.max(0, killAt - Date.now())));
  const killedAt = Date.now();
  await pb.process.kill();
  process.stderr.write(`crawl: broker SIGKILLed\n`);
  await new Promise((r) => setTimeout(r, restartAfterMs));
  await pb.process.start();
  const listeningAt = Date.now();
  process.stderr.write(`crawl: broker listening again\n`);
  return { killedAt, listeningAt };
}

/** "reason a (× 3); reason b": each distinct rejection reason once, with its count. */
function distinctReasons(rejected: ReadonlyArray<{ readonly reason: string }>): string {
  const counts = new Map<string, number>();
  for (const { reason } of rejected) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  return [...counts].map(([reason, n]) => (n > 1 ? `${reason} (× ${n})` : reason)).join("; ");
}

async function setUp(env: Env, strategy: Strategy, pb: PhaseBroker | undefined): Promise<void> {
  const { redis, proxies } = env;
  if (strategy === "seed000") await redis.zadd(SEED000_POOL_KEY, ...proxies.flatMap((p) => [50, p]));
  if (strategy === "seed003") await redis.sadd(SEED003_POOL_KEY, ...proxies);
  if (pb !== undefined) {
    const r = await pb.admin.addProxies({ pool: "default", proxies: proxies.map((p) => ({ url: `http://${p}`, tier: "", labels: {} })) });
    if (r.rejected.length > 0)
      throw new Error(`broker rejected ${r.rejected.length} of ${proxies.length} proxies: ${distinctReasons(r.rejected)}`);
    for (const [i, site] of env.sites.sites.entries()) {
      if (!configured(env.options, i)) continue;
      const { pacing, jitterMs } = env.options;
      await pb.admin.setDomainPolicy({
        policy: {
          pattern: site.host.split(":")[0] ?? "",
          minInterval: durationFromMs(site.rules.minIntervalMs),
          pacing: pacing === "grant" ? PacingMode.AFTER_GRANT : PacingMode.AFTER_RELEASE,
          ...(jitterMs > 0 ? { jitter: durationFromMs(jitterMs) } : {}),
          ...isolationPolicyFields(env.options.isolation),
        },
      });
    }
  }
}

/** One strategy's result: its row, and per worker language the pages it took (ProxyBroker's mix). */
interface StrategyResult {
  readonly row: Row;
  readonly sites: readonly SiteRow[];
  /** The crash mode's timeline (CRAWL_KILL_AT_S). */
  readonly timeline?: OutageTimeline;
  /** The partition mode's timeline (CRAWL_PARTITION_AT_S; proxybroker only). */
  readonly partition?: PartitionTimeline;
  readonly languages: ReadonlyArray<{ readonly label: string; readonly workers: number; readonly pages: number }>;
  /** The isolation group's check of the sites' log (CRAWL_ISOLATION; every strategy, enforced or not). */
  readonly isolation: IsolationRow | undefined;
  /** The provider scenario: the sites' figures per exit, at every site and at the sites with a policy (the gate's). */
  readonly exits?: { readonly all: readonly ExitRow[]; readonly gated: readonly ExitRow[] };
}

/** The broker's settings of a crawl: in the provider scenario, health checks against the echo site (to learn exits). */
function brokerEnv(env: Env): Record<string, string> {
  if (env.provider === undefined) return {};
  return { HEALTH_CHECK_URL: env.provider.echo.url, HEALTH_CHECK_INTERVAL_MS: "2000" };
}

async function runStrategy(env: Env, strategy: Strategy): Promise<StrategyResult> {
  await env.redis.flushall();
  env.sites.reset();
  const pb =
    strategy === "proxybroker" || strategy === "gateway"
      ? await startPhaseBroker(env.redisUrl, strategy, { env: brokerEnv(env) })
      : undefined;
  const gateway = strategy === "gateway" || (strategy === "proxybroker" && env.options.gatewayWorkers > 0);
  const gw = gateway && pb !== undefined ? await startGatewayProcess(pb.address, gatewayOptions(env)) : undefined;
  try {
    return await runWith(env, strategy, pb, gw);
  } finally {
    await gw?.stop();
    await pb?.close();
  }
}

/** Interception mode: the gateway signs with the test CA and trusts it for the sites; otherwise no CA. */
function gatewayOptions(env: Env): GatewayProcessOptions {
  const { certs } = env;
  if (env.options.https !== "intercept" || certs === undefined) return {};
  return { intercept: { caCertFile: certs.caFile, caKeyFile: certs.caKeyFile, upstreamCaFile: certs.caFile } };
}

/** What the gateway's workers get in the HTTPS mode: the CA to trust, and how to use their connections. */
function httpsConfig(env: Env): Pick<WorkerConfig, "https"> {
  const { certs } = env;
  if (env.options.https === "off" || certs === undefined) return {};
  return { https: { caFile: certs.caFile, connection: env.options.gatewayClient.connections } };
}

async function runWith(env: Env, strategy: Strategy, pb: PhaseBroker | undefined, gw: GatewayProcess | undefined): Promise<StrategyResult> {
  const { options } = env;
  await setUp(env, strategy, pb);
  const intervals = env.sites.sites.map((s) => s.rules.minIntervalMs);
  const maxPerSite = Math.ceil((theoreticalMaxPerMinute(env.proxies.length, [Math.min(...intervals)]) * options.seconds) / 60);
  await fillQueues(env.redis, env.sites.sites, maxPerSite * 3 + 100);
  const startAt = Date.now() + WORKER_BOOT_MS;
  const endAt = startAt + options.seconds * 1000;
  const python = strategy === "proxybroker" ? options.pythonWorkers : 0;
  // the mixed fleet's gateway clients, after the strategy's own workers (queues, ids)
  const gateways = strategy === "proxybroker" ? options.gatewayWorkers : 0;
  const idOf = (language: "ts" | "py", i: number): string =>
    language === "py" ? `${strategy}-py-${i}` : python > 0 ? `${strategy}-ts-${i}` : `${strategy}-${i}`;
  const partition = strategy === "proxybroker" && pb !== undefined ? options.partition : undefined;
  const cutWorker = partition === undefined ? undefined : idOf(partition.language, partition.index);
  const relay: PartitionRelay | undefined =
    partition === undefined || pb === undefined
      ? undefined
      : await startPartitionRelay({ brokerAddress: pb.address, cutAt: startAt + partition.atMs });
  const config = (id: string, w: number): WorkerConfig => ({
    workerId: id,
    redisUrl: env.redisUrl,
    queueKeys: queuesFor(w, options.concurrency, env.sites.sites.length, options.shape),
    proxies: env.proxies,
    brokerAddress: (id === cutWorker ? relay?.address : pb?.address) ?? "",
    ...(gw === undefined ? {} : { gatewayAddress: gw.address, ...httpsConfig(env) }),
    startAt,
    endAt,
    concurrency: options.concurrency,
    timeoutMs: REQUEST_TIMEOUT_MS,
    retryDelayMs: 100,
  });
  const killAt = endAt + REQUEST_TIMEOUT_MS + 15_000;
  const pacing = pb !== undefined ? samplePacing(env, pb, endAt, startAt) : Promise.resolve([]);
  const outage = pb !== undefined && options.killAtMs > 0 ? crashBroker(pb, startAt + options.killAtMs, options.restartAfterMs) : undefined;
  const gatewayCommand = gatewayClientCommand(options.gatewayClient);
  const ownCommand = strategy === "gateway" ? gatewayCommand : undefined;
  const { all: run, groups } = await runWorkerGroups([
    {
      label: strategy === "gateway" ? gatewayClientLabel(options.gatewayClient) : "TypeScript",
      entry: strategy,
      ...(ownCommand === undefined ? {} : { command: ownCommand }),
      count: options.workers - python,
      killAt,
      config: (i) => config(idOf("ts", i), i),
    },
    {
      label: "Python Scrapy",
      entry: strategy,
      command: pythonWorkerCommand(),
      count: python,
      killAt,
      config: (i) => config(idOf("py", i), options.workers - python + i),
    },
    {
      label: "Gateway",
      entry: "gateway",
      ...(gatewayCommand === undefined ? {} : { command: gatewayCommand }),
      count: gateways,
      killAt,
      config: (i) => config(`${strategy}-gw-${i}`, options.workers + i),
    },
  ]).finally(() => relay?.close());
  const cutAt = relay?.cutAt();
  const pacingSamples = await pacing;
  const crash = outage === undefined ? undefined : await outage;
  const kinds = [
    ...(python > 0 || gateways > 0 ? [`${options.workers - python} TS`] : []),
    ...(python > 0 ? [`${python} Py`] : []),
    ...(gateways > 0 ? [`${gateways} GW`] : []),
  ];
  const label = kinds.length > 0 ? `${strategy} (${kinds.join(" + ")})` : strategy;
  const isolation: IsolationRow | undefined =
    options.isolation === undefined
      ? undefined
      : {
          strategy,
          label,
          enforced: pb !== undefined,
          startAt,
          check: checkIsolation(env.sites.log, new Set(groupSites(env)), options.isolation.affinityMs),
        };
  const logDir = process.env["CRAWL_LOG_DIR"];
  if (logDir !== undefined && logDir !== "") {
    await mkdir(logDir, { recursive: true });
    const logs: [string, unknown][] = [
      [`${strategy}.sites.json`, env.sites.log],
      [`${strategy}.reports.json`, run.reports],
      [`${strategy}.pacing.json`, pacingSamples],
    ];
    if (options.isolation !== undefined && isolation !== undefined)
      logs.push([`${strategy}.isolation.json`, isolationRecord(options.isolation, groupSites(env), isolation)]);
    for (const [name, data] of logs) {
      await writeFile(join(logDir, name), JSON.stringify(data));
      written.push(resolve(logDir, name));
    }
    if (pb !== undefined) {
      await writeFile(join(logDir, `${strategy}.broker.log`), pb.process.output());
      written.push(resolve(logDir, `${strategy}.broker.log`));
    }
    if (logDir !== undefined && logDir !== "" && gw !== undefined) {
      await writeFile(join(logDir, `${strategy}.gateway.log`), gw.output());
      written.push(resolve(logDir, `${strategy}.gateway.log`));
    }
  }
  const row = computeRow({
    strategy,
    label,
    reports: run.reports,
    log: env.sites.log,
    counters: env.sites.counters(),
    startAt,
    endAt,
    proxies: env.capacity,
    siteIntervalsMs: intervals,
    workerFailures: run.failures,
  });
  const sites = computeSiteRows({
    sites: env.sites.sites,
    policyMs: (site) => (pb !== undefined && configured(options, env.sites.sites.indexOf(site)) ? site.rules.minIntervalMs : undefined),
    counters: (site) => env.sites.counters(site.host),
    reports: run.reports,
    log: env.sites.log,
    startAt,
    endAt,
    proxies: env.capacity,
  });
  const languages = groups
    .filter((g) => g.count > 0)
    .map((g) => ({ label: g.label, workers: g.count, pages: pagesTaken(g.reports, endAt) }));
  const timeline = crash === undefined ? undefined : outageTimeline(run.reports, env.sites.log, crash, { startAt, endAt });
  const cut =
    cutWorker === undefined || cutAt === undefined
      ? undefined
      : partitionTimeline({
          reports: run.reports,
          log: env.sites.log,
          bans: banTimes(env.sites.log, (host) => env.sites.sites.find((s) => s.host === host)?.rules),
          worker: cutWorker,
          cutAt,
          startAt,
          endAt,
          proxies: env.capacity,
          siteIntervalsMs: intervals,
        });
  const exits = env.provider === undefined ? undefined : exitView(env, env.provider.sim);
  return {
    row,
    sites,
    languages,
    isolation,
    ...(exits !== undefined ? { exits } : {}),
    ...(timeline !== undefined ? { timeline } : {}),
    ...(cut !== undefined ? { partition: cut } : {}),
  };
}

/** The sites' figures per exit of the provider: at every site, and at the sites with a policy. */
function exitView(env: Env, sim: ProviderSim): NonNullable<StrategyResult["exits"]> {
  const sessionsOf = (exit: string): number => sim.sessions.filter((s) => sim.exitOf(s.name) === exit).length;
  const rows = (hosts: readonly string[]): ExitRow[] => computeExitRows({ sites: env.sites, hosts, exits: sim.exits, sessionsOf });
  return { all: rows(env.sites.sites.map((s) => s.host)), gated: rows(groupSites(env)) };
}

/** One strategy's view per exit (the provider scenario). */
interface ExitViewRow {
  readonly strategy: Strategy;
  readonly label: string;
  /** Against what the exits allow. */
  readonly efficiency: number;
  readonly all: readonly ExitRow[];
  readonly gated: readonly ExitRow[];
}

/** Each strategy's table per exit (every site), with its efficiency against the exits. */
function formatExitViews(views: readonly ExitViewRow[], exits: number): string {
  const head = `Per exit IP (the sites' counters by client address; efficiency against what ${exits} exits allow):`;
  return [head, ...views.map((v) => `${v.label}: efficiency ${v.efficiency.toFixed(2)}\n\n${formatExitTable(v.all)}`)].join("\n\n");
}

/**
 * The provider scenario reports a strategy that could not run (e.g. the broker refusing sessions
 * that share an endpoint) and goes on with the others; elsewhere an error ends the run.
 */
async function runStrategyReported(env: Env, strategy: Strategy): Promise<StrategyResult | { readonly failed: string }> {
  if (env.provider === undefined) return runStrategy(env, strategy);
  try {
    return await runStrategy(env, strategy);
  } catch (err) {
    return { failed: err instanceof Error ? err.message : String(err) };
  }
}

async function main(): Promise<number> {
  const options = readOptions();
  if (options.pythonWorkers > 0) checkPython();
  if (options.strategies.includes("gateway") || options.gatewayWorkers > 0) checkGatewayClient(options.gatewayClient);
  const redisServer = await startRedisServer();
  const redis = new Redis(redisServer.url);
  const rule = (minIntervalMs: number): SiteRules => ({
    minIntervalMs,
    toleranceMs: options.toleranceMs,
    violationsToBan: 3,
    violationWindowMs: 60_000,
    banMs: options.banMs,
    pageDelayMs: options.pageMs,
  });
  const rules = [
    ...Array.from({ length: options.sites }, () => rule(options.minIntervalMs)),
    ...Array.from({ length: options.freeSites }, () => rule(options.freeIntervalMs)),
  ];
  const certs = options.https === "off" ? undefined : await makeSiteCerts(rules.map((_, i) => siteAddress(i)));
  const sites = await startSites({ rules, ...(certs === undefined ? {} : { tls: { cert: certs.cert, key: certs.key } }) });
  const supply = await startProxySupply({ proxies: options.proxies, provider: options.provider });
  const env: Env = {
    redis,
    redisUrl: redisServer.url,
    sites,
    proxies: supply.proxies,
    capacity: supply.capacity,
    provider: supply.provider,
    options,
    certs,
  };
  const rows: Row[] = [];
  let pbSites: readonly SiteRow[] = [];
  let pbTimeline: OutageTimeline | undefined;
  let pbPartition: PartitionTimeline | undefined;
  let gwSites: readonly SiteRow[] = [];
  let gwTimeline: OutageTimeline | undefined;
  const mixes: string[] = [];
  const mixFailures: string[] = [];
  const isolationRows: IsolationRow[] = [];
  const long: LongDownloadResult[] = [];
  const exitViews: ExitViewRow[] = [];
  const failed: Array<{ readonly strategy: Strategy; readonly message: string }> = [];
  try {
    process.stderr.write(`crawl: ${describe(options)}, ${options.seconds} s per strategy\n`);
    if (options.https !== "off" && process.env["CRAWL_LONG"] !== "0")
      process.stderr.write("crawl: no long-download check in the HTTPS mode (its workers speak plain HTTP)\n");
    if (options.provider !== undefined && process.env["CRAWL_LONG"] !== "0")
      process.stderr.write("crawl: no long-download check in the provider scenario (it runs on tinyproxies)\n");
    for (const strategy of options.strategies) {
      const result = await runStrategyReported(env, strategy);
      if ("failed" in result) {
        failed.push({ strategy, message: result.failed });
        process.stderr.write(`crawl: ${strategy} did not run: ${result.failed}\n`);
        continue;
      }
      const { row, sites: siteRows, languages, timeline, partition, isolation, exits } = result;
      if (exits !== undefined) exitViews.push({ strategy, label: row.label, efficiency: row.efficiency, ...exits });
      if (isolation !== undefined) isolationRows.push(isolation);
      if (strategy === "proxybroker") {
        pbSites = siteRows;
        pbTimeline = timeline;
        pbPartition = partition;
      }
      if (strategy === "gateway") {
        gwSites = siteRows;
        gwTimeline = timeline;
      }
      if (languages.length > 1) {
        mixes.push(
          `${row.strategy} workers: ${languages.map((l) => `${l.label} ${l.workers} × ${options.concurrency} → ${l.pages} pages`).join(", ")}`,
        );
        for (const l of languages) if (l.pages === 0) mixFailures.push(`the ${l.label} workers took no page`);
      }
      process.stderr.write(`crawl: ${strategy} done (${row.pages} pages)\n`);
      rows.push(row);
    }
    if (options.longDownload) {
      for (const heartbeat of [true, false]) {
        await env.redis.flushall();
        const pb = await startPhaseBroker(env.redisUrl, "long");
        try {
          long.push(
            await runLongDownload({
              ...env,
              admin: pb.admin,
              brokerAddress: pb.address,
              minIntervalMs: options.minIntervalMs,
              leaseTtlMs: options.leaseTtlMs,
              heartbeat,
              python: options.pythonWorkers > 0,
            }),
          );
        } finally {
          await pb.close();
        }
        process.stderr.write(`crawl: long download (heartbeat ${String(heartbeat)}) done\n`);
      }
    }
  } finally {
    await supply.stop();
    await sites.close();
    redis.disconnect();
    await redisServer.stop();
    await certs?.remove();
  }
  const intervals = sites.sites.map((s) => s.rules.minIntervalMs);
  const max = theoreticalMaxPerMinute(supply.capacity, intervals);
  const siteTable =
    (pbSites.length > 0 ? `\nProxyBroker per site:\n\n${formatSiteTable(pbSites)}\n` : "") +
    (pbTimeline !== undefined ? `\n${formatOutage(pbTimeline)}\n` : "") +
    (pbPartition !== undefined ? `\n${formatPartition(pbPartition)}\n` : "") +
    (gwSites.length > 0 ? `\nGateway per site:\n\n${formatSiteTable(gwSites)}\n` : "") +
    (gwTimeline !== undefined ? `\n${formatOutage(gwTimeline, "The gateway")}\n` : "") +
    (options.isolation !== undefined ? `\n${formatIsolation(options.isolation, groupSites(env), isolationRows)}\n` : "") +
    (options.provider !== undefined ? `\n${formatExitViews(exitViews, supply.capacity)}\n` : "") +
    failed.map((f) => `\n${f.strategy} did not run: ${f.message}\n`).join("");
  process.stdout.write(
    `${describe(options)}, ${options.seconds} s each; theoretical max ${max.toFixed(0)} pages/min\n\n${formatTable(rows)}\n${siteTable}${mixes.map((m) => `\n${m}`).join("")}${mixes.length > 0 ? "\n" : ""}${long.map((r) => `\n${formatLongDownload(r, options.leaseTtlMs)}`).join("")}\n`,
  );
  const pb = rows.find((r) => r.strategy === "proxybroker");
  const gwRow = rows.find((r) => r.strategy === "gateway");
  if (options.gate) {
    const why = pb === undefined ? [] : [...gateFailures(pb, pbSites, options.maxFree429), ...mixFailures];
    const gwGated = gatewayGated(options.https, options.gatewayClient.connections);
    if (gwRow !== undefined && gwGated) why.push(...gateFailures(gwRow, gwSites, options.maxFree429).map((w) => `gateway: ${w}`));
    if (gwRow !== undefined && !gwGated)
      process.stdout.write(
        "\nCRAWL_GATE: the gateway is not judged in tunnel mode with kept-alive connections (its pacing holds per tunnel, not per request)\n",
      );
    for (const r of isolationRows) why.push(...isolationGateFailures(r).map((w) => `${r.strategy}: ${w}`));
    if (pbTimeline !== undefined && pbTimeline.during.pages === 0) why.push("no page while the broker was down");
    if (pbTimeline !== undefined && pbTimeline.after.pages === 0) why.push("no page after the broker came back");
    if (pbPartition !== undefined)
      why.push(...partitionGateFailures(pbPartition, options.partition?.minRatio ?? 0, options.partition?.minEfficiency ?? 0));
    if (options.provider !== undefined) {
      const judged = (s: Strategy): boolean => s === "proxybroker" || (s === "gateway" && gwGated);
      for (const f of failed) if (judged(f.strategy)) why.push(`${f.strategy} did not run: ${f.message}`);
      for (const v of exitViews)
        if (judged(v.strategy))
          why.push(...exitGateFailures(v.gated, v.efficiency, options.provider.minEfficiency).map((w) => `${v.strategy}: ${w}`));
    }
    const lh = long.find((r) => r.heartbeat);
    if (lh !== undefined && (lh.overlaps > 0 || lh.streamsComplete < lh.streams))
      why.push(`long downloads: ${lh.overlaps} overlaps, ${lh.streamsComplete}/${lh.streams} complete`);
    if (why.length > 0) {
      process.stdout.write(`\nCRAWL_GATE: ProxyBroker failed: ${why.join(", ")}\n`);
      return 1;
    }
  }
  return 0;
}

// Ctrl-C / SIGTERM: exit, so the exit hooks kill redis-server, the tinyproxies and the broker.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

/** Last, whatever the outcome: where the records went. */
function recordsWritten(): void {
  process.stdout.write(`${recordsLine("crawl", written, "set CRAWL_LOG_DIR to keep the site logs, worker reports and pacing samples")}\n`);
}

main().then(
  (code) => {
    recordsWritten();
    process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`crawl: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    recordsWritten();
    process.exit(2);
  },
);
