/**
 * The long-download check: N `/stream` downloads of 3× the lease TTL (one per proxy) on one site
 * through ProxyBroker, while other loops fetch that site's pages and wait for a proxy. With
 * heartbeats every lease stays exclusive for the whole stream: 0 overlaps in the site's log, every
 * stream complete. The control run without heartbeats shows what the heartbeats prevent.
 */
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { Redis } from "ioredis";
import type { ProxyAdmin } from "../sdk/gen/proxybroker/v1/admin_pb.js";
import type { ClientOf } from "../sdk/rpc/grpc-adapter.js";
import { countOverlaps } from "./sites.js";
import type { Sites } from "./sites.js";
import { runWorkers } from "./spawn-workers.js";
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
}

export interface LongDownloadResult {
  readonly heartbeat: boolean;
  readonly streams: number;
  readonly streamsComplete: number;
  readonly pages: number;
  readonly overlaps: number;
  readonly rateLimited: number;
}

const BOOT_MS = 4_000;

export async function runLongDownload(o: LongDownloadOptions): Promise<LongDownloadResult> {
  const site = o.sites.sites[0];
  if (site === undefined) throw new Error("long download: no site");
  await o.redis.flushall();
  o.sites.reset();
  await o.admin.addProxies({ pool: "default", proxies: o.proxies.map((p) => ({ url: `http://${p}`, tier: "", labels: {} })) });
  await o.admin.setDomainPolicy({ policy: { pattern: site.host.split(":")[0] ?? "", minInterval: durationFromMs(o.minIntervalMs) } });
  const streamMs = 3 * o.leaseTtlMs;
  const streams = o.proxies.map((_, i) => `${site.origin}/stream?ms=${streamMs}&n=${i}`);
  const pages = Array.from({ length: 200 }, (_, n) => `${site.origin}/page/${n + 1}`);
  await o.redis.rpush(QUEUE_KEY, ...streams);
  await o.redis.rpush(QUEUE_KEY, ...pages);
  const startAt = Date.now() + BOOT_MS;
  const endAt = startAt + streamMs + 4_000;
  const workers = 2;
  const run = await runWorkers({
    entry: "long-download",
    count: workers,
    killAt: endAt + 60_000,
    config: (i) => ({
      workerId: `long-${i}`,
      redisUrl: o.redisUrl,
      queueKey: QUEUE_KEY,
      proxies: o.proxies,
      brokerAddress: o.brokerAddress,
      startAt,
      endAt,
      concurrency: Math.ceil(o.proxies.length / workers) + 2,
      timeoutMs: streamMs + 10_000,
      retryDelayMs: 100,
      leaseTtlMs: o.leaseTtlMs,
      heartbeat: o.heartbeat,
    }),
  });
  const isStream = (url: string): boolean => new URL(url).pathname === "/stream";
  return {
    heartbeat: o.heartbeat,
    streams: streams.length,
    streamsComplete: new Set(run.reports.filter((r) => isStream(r.url) && r.accepted).map((r) => r.url)).size,
    pages: run.reports.filter((r) => !isStream(r.url) && r.accepted && r.real).length,
    overlaps: countOverlaps(o.sites.log),
    rateLimited: o.sites.counters().rateLimited,
  };
}

export function formatLongDownload(r: LongDownloadResult, leaseTtlMs: number): string {
  const label = r.heartbeat ? "with heartbeats" : "without heartbeats (control)";
  return `long downloads ${label}: ${r.streamsComplete}/${r.streams} streams of ${(3 * leaseTtlMs) / 1000} s complete on leases of ${leaseTtlMs / 1000} s TTL; ${r.pages} pages fetched meanwhile; overlaps ${r.overlaps}, 429s ${r.rateLimited}`;
}
