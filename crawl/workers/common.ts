/**
 * What every strategy's worker process shares: its configuration (JSON in argv[2]), the shared
 * page queues (one Redis list per site; a page not accepted goes back to its tail, as a retry),
 * the crawl loops (loop j serves queue j mod the number of queues, as a crawler keeps a slot per
 * domain, so a slow site never holds up the others), a non-keep-alive HTTP GET through a proxy,
 * and the JSON-line reports on stdout. A strategy's attempt is told which loop calls it, so that
 * it can keep a connection per loop (the gateway's HTTPS workers).
 */
import { request } from "node:http";
import type { IncomingHttpHeaders } from "node:http";
import { Redis } from "ioredis";
import { CONTENT_MARKER } from "../sites.js";

export interface WorkerConfig {
  readonly workerId: string;
  readonly redisUrl: string;
  /** The page queues; loop j pops from queueKeys[j % length]. */
  readonly queueKeys: readonly string[];
  /** `127.0.0.1:port` of every proxy (`user:password@127.0.0.1:port` for a provider's username sessions). */
  readonly proxies: readonly string[];
  readonly brokerAddress: string;
  /** Strategy "gateway": `127.0.0.1:port` of the gateway. */
  readonly gatewayAddress?: string;
  /**
   * Strategy "gateway" in the HTTPS mode (CRAWL_HTTPS): the CA file (PEM) to trust. The workers do
   * the same in tunnel and interception mode; the gateway's mode decides what happens to a tunnel.
   */
  readonly https?: {
    readonly caFile: string;
    /** One kept-alive connection per loop (default), or a new one per request (CRAWL_HTTPS_CONNECTIONS). */
    readonly connection?: "keep-alive" | "per-request";
  };
  /** Epoch ms: start crawling at, stop starting requests at. */
  readonly startAt: number;
  readonly endAt: number;
  /** Concurrent requests in this worker. */
  readonly concurrency: number;
  readonly timeoutMs: number;
  /** Pause before retrying when the strategy found no proxy, ms. */
  readonly retryDelayMs: number;
  /** Long-download check only: the lease TTL asked for, and whether the SDK heartbeats. */
  readonly leaseTtlMs?: number;
  readonly heartbeat?: boolean;
}

/** One JSON line on stdout per request. */
export interface FetchReport {
  readonly t: number;
  readonly url: string;
  readonly proxy: string;
  /** 0 when the request failed without a response. */
  readonly status: number;
  /** The strategy took the answer for the page's content. */
  readonly accepted: boolean;
  /** Ground truth for the harness: the body really carries the content marker. */
  readonly real: boolean;
  /** Where the lease came from (ProxyBroker's TypeScript workers): "broker" or "fallback". */
  readonly source?: string;
  /** The worker process's id. */
  readonly worker?: string;
}

export interface HttpResult {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** What a strategy did with one URL: a report, or "no proxy" (retry later). */
export type Attempt =
  | {
      readonly kind: "fetched";
      readonly proxy: string;
      readonly status: number;
      readonly body: string;
      readonly accepted: boolean;
      readonly source?: string;
    }
  | { readonly kind: "no-proxy" };

/** A strategy's try at one URL; `loop` is the calling loop's index (0 … concurrency − 1). */
export type AttemptFn = (url: string, loop: number) => Promise<Attempt>;

export function readConfig(): WorkerConfig {
  const raw = process.argv[2];
  if (raw === undefined) throw new Error("worker: configuration JSON expected as the first argument");
  return JSON.parse(raw) as WorkerConfig;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** `Proxy-Authorization` for a proxy `user:password@host:port`; none without credentials. */
function proxyAuthorization(proxy: URL): Record<string, string> {
  if (proxy.username === "") return {};
  const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return { "proxy-authorization": `Basic ${Buffer.from(credentials).toString("base64")}` };
}

/** GET `url` through the HTTP proxy `proxy` (`host:port` or `user:password@host:port`), absolute-URI form, no keep-alive. */
export function getViaProxy(
  proxy: string,
  url: string,
  timeoutMs: number,
  headers: Readonly<Record<string, string>> = {},
): Promise<HttpResult> {
  const endpoint = new URL(`http://${proxy}`);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: endpoint.hostname,
        port: Number(endpoint.port),
        method: "GET",
        path: url,
        agent: false,
        headers: { ...headers, ...proxyAuthorization(endpoint), host: new URL(url).host, connection: "close" },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

function emit(report: FetchReport): void {
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

/** Run `concurrency` loops over the shared queue until `endAt`, then exit the process. */
export async function crawl(config: WorkerConfig, attempt: AttemptFn, close: () => Promise<void> = async () => undefined): Promise<void> {
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 });
  await sleep(Math.max(0, config.startAt - Date.now()));
  const loop = async (queueKey: string, index: number): Promise<void> => {
    while (Date.now() < config.endAt) {
      const url = await redis.lpop(queueKey);
      if (url === null) {
        await sleep(50);
        continue;
      }
      const a = await attempt(url, index);
      if (a.kind === "no-proxy") {
        await redis.rpush(queueKey, url);
        await sleep(config.retryDelayMs);
        continue;
      }
      emit({
        t: Date.now(),
        url,
        proxy: a.proxy,
        status: a.status,
        accepted: a.accepted,
        real: a.body.includes(CONTENT_MARKER),
        ...(a.source !== undefined ? { source: a.source } : {}),
        worker: config.workerId,
      });
      if (!a.accepted) await redis.rpush(queueKey, url);
    }
  };
  const keys = config.queueKeys;
  await Promise.all(Array.from({ length: config.concurrency }, (_, j) => loop(keys[j % keys.length] ?? "", j)));
  await close();
  redis.disconnect();
}

/** Start a worker: read the config, crawl, exit 0 (or 1 on an error, with the message on stderr). */
export function runWorker(build: (config: WorkerConfig) => Promise<{ attempt: AttemptFn; close?: () => Promise<void> }>): void {
  const config = readConfig();
  build(config)
    .then(async ({ attempt, close }) => crawl(config, attempt, close))
    .then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`worker ${config.workerId}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
        process.exit(1);
      },
    );
}
