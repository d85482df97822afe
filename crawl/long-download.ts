/**
 * The long-download check: N `/stream` downloads of 3× the lease TTL (one per proxy) on one site
 * through ProxyBroker, while other loops fetch that site's pages and wait for a proxy. With
 * heartbeats every lease stays exclusive for the whole stream: 0 overlaps in the site's log, every
 * stream complete. The control run without heartbeats shows what the heartbeats prevent.
 *
 * With `python`, one TypeScript worker (SDK `withLease`) and one Python Scrapy worker (the
 * middleware holds the lease, the client heartbeats it, until the body is in) crawl at once, each
 * from its own queue holding half the streams and its own pages of the same site, so both
 * languages hold stream leases while the other language's page fetches wait for a proxy.
 */
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { Redis } from "ioredis";
import type { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { countOverlaps } from "./sites.js";
import type { Sites } from "./sites.js";
import { pythonWorkerCommand } from "./python-workers.js";
import { runWorkerGroups } from "./spawn-workers.js";
import type { WorkerConfig } from "./workers/common.js";
import { QUEUE_KEY } from "./workers/keys.js";

export interface LongDownloadOptions {
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly sites: Sites;
  readonly proxies: readonly string[];
  readonly admin: ClientOf<typeof ProxyAdmin>;
  readonly brokerAddress: string;
  readonly minIntervalMs: number;
  readonly leaseTtlMs: number;
  readonly heartbeat: boolean;
  /** A Python Scrapy worker streams and crawls next to a TypeScript one. */
  readonly python: boolean;
}

export interface LanguageStreams {
  readonly label: string;
  readonly streams: number;
  readonly complete: number;
}

export interface LongDownloadResult {
  readonly heartbeat: boolean;
  readonly streams: number;
  readonly streamsComplete: number;
  readonly pages: number;
  readonly overlaps: number;
  readonly rateLimited: number;
  readonly languages: readonly LanguageStreams[];
}

const BOOT_MS = 4_000;

/** The workers of one language in the check: their own queue, streams and pages. */
interface WorkerGroupPlan {
  readonly label: string;
  readonly tag: string;
  /** argv before the config JSON; none: the TypeScript worker `crawl/workers/long-download.ts`. */
  readonly command?: readonly string[];
  readonly queue: string;
  readonly count: number;
  readonly streams: readonly string[];
  readonly pages: readonly string[];
}

export async function runLongDownload(o: LongDownloadOptions): Promise<LongDownloadResult> {
  const site = o.sites.sites[0];
  if (site === undefined) throw new Error("long download: no site");
  o.sites.reset();
  await o.admin.addProxies({ pool: "default", proxies: o.proxies.map((p) => ({ url: `http://${p}`, tier: "", labels: {} })) });
  await o.admin.setDomainPolicy({ policy: { pattern: site.host.split(":")[0] ?? "", minInterval: durationFromMs(o.minIntervalMs) } });
  const streamMs = 3 * o.leaseTtlMs;
  const streams = o.proxies.map((_, i) => `${site.origin}/stream?ms=${streamMs}&n=${i}`);
  const pages = Array.from({ length: 200 }, (_, n) => `${site.origin}/page/${n + 1}`);
  // Without Python: 2 TypeScript workers on one queue. With: 1 + 1, each on its own queue.
  const plan: readonly WorkerGroupPlan[] = o.python
    ? [
        {
          label: "TypeScript",
          tag: "ts",
          queue: `${QUEUE_KEY}:ts`,
          count: 1,
          streams: streams.filter((_, i) => i % 2 === 0),
          pages: pages.slice(0, 100),
        },
        {
          label: "Python",
          tag: "py",
          command: pythonWorkerCommand(),
          queue: `${QUEUE_KEY}:py`,
          count: 1,
          streams: streams.filter((_, i) => i % 2 === 1),
          pages: pages.slice(100),
        },
      ]
    : [{ label: "TypeScript", tag: "ts", queue: QUEUE_KEY, count: 2, streams, pages }];
  for (const p of plan) await o.redis.rpush(p.queue, ...p.streams, ...p.pages);
  const startAt = Date.now() + BOOT_MS;
  const endAt = startAt + streamMs + 4_000;
  const config = (id: string, queueKey: string, concurrency: number): WorkerConfig => ({
    workerId: id,
    redisUrl: o.redisUrl,
    queueKeys: [queueKey],
    proxies: o.proxies,
    brokerAddress: o.brokerAddress,
    startAt,
    endAt,
    concurrency,
    timeoutMs: streamMs + 10_000,
    retryDelayMs: 100,
    leaseTtlMs: o.leaseTtlMs,
    heartbeat: o.heartbeat,
  });
  const { all: run, groups } = await runWorkerGroups(
    plan.map((p) => ({
      label: p.label,
      entry: "long-download",
      ...(p.command !== undefined ? { command: p.command } : {}),
      count: p.count,
      killAt: endAt + 60_000,
      config: (i: number) => config(`long-${p.tag}-${i}`, p.queue, Math.ceil(p.streams.length / p.count) + 2),
    })),
  );
  const isStream = (url: string): boolean => new URL(url).pathname === "/stream";
  const complete = (reports: typeof run.reports): number =>
    new Set(reports.filter((r) => isStream(r.url) && r.accepted).map((r) => r.url)).size;
  return {
    heartbeat: o.heartbeat,
    streams: streams.length,
    streamsComplete: complete(run.reports),
    languages: groups.map((g, i) => ({ label: g.label, streams: plan[i]?.streams.length ?? 0, complete: complete(g.reports) })),
    pages: run.reports.filter((r) => !isStream(r.url) && r.accepted && r.real).length,
    overlaps: countOverlaps(o.sites.log),
    rateLimited: o.sites.counters().rateLimited,
  };
}

export function formatLongDownload(r: LongDownloadResult, leaseTtlMs: number): string {
  const label = r.heartbeat ? "with heartbeats" : "without heartbeats (control)";
  const by = r.languages.length > 1 ? ` (${r.languages.map((l) => `${l.label} ${l.complete}/${l.streams}`).join(", ")})` : "";
  return `long downloads ${label}: ${r.streamsComplete}/${r.streams}${by} streams of ${(3 * leaseTtlMs) / 1000} s complete on leases of ${leaseTtlMs / 1000} s TTL; ${r.pages} pages fetched meanwhile; overlaps ${r.overlaps}, 429s ${r.rateLimited}`;
}
