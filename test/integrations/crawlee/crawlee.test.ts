/**
 * @proxybroker/crawlee with a real Crawlee HttpCrawler in two worker processes, through real
 * tinyproxies, against sites as strict as real anti-bot systems (one request in flight per IP, 300 ms
 * between arrivals with no tolerance, 3 violations → a ban): every page fetched, no overlap, no 429,
 * no ban.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { countOverlaps, startSites } from "../../../crawl/sites.js";
import type { Sites } from "../../../crawl/sites.js";
import { brokerProcess } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { withRedis } from "../../support/with-redis.js";
import { startTinyproxies } from "../../support/tinyproxies.js";
import type { Tinyproxies } from "../../support/tinyproxies.js";
import { tsEntryArgs } from "../../support/node-ts.js";

const run = promisify(execFile);
const PAGES_PER_SITE = 30;
const RULE_MS = 300;

describe("@proxybroker/crawlee", () => {
  const redis = withRedis();
  let sites: Sites;
  let tiny: Tinyproxies;
  let broker: BrokerProcess;
  let dir: string;

  beforeAll(async () => {
    const rules = {
      minIntervalMs: RULE_MS,
      toleranceMs: 0,
      violationsToBan: 3,
      violationWindowMs: 60_000,
      banMs: 20_000,
      pageDelayMs: [2, 8] as const,
    };
    sites = await startSites({ rules: [rules, rules] });
    tiny = await startTinyproxies({ count: 4 });
    dir = await mkdtemp(join(tmpdir(), "pb-crawlee-"));
    const file = join(dir, "proxies.txt");
    await writeFile(file, tiny.proxies.map((p) => `http://${p.address}`).join("\n"));
    broker = await brokerProcess({ redisUrl: redis.url(), env: { PROXIES_FILE: file } });
    await broker.start();
    const channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    const admin = createClient(ProxyAdmin, channel);
    for (const s of sites.sites)
      await admin.setDomainPolicy({ policy: { pattern: s.host.split(":")[0]!, minInterval: durationFromMs(RULE_MS) } });
    channel.close();
  }, 60_000);

  afterAll(async () => {
    await broker?.stop();
    await tiny?.stop();
    await sites?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("two HttpCrawler processes: every page, 0 overlaps, 0 429s, 0 bans, every lease released", { timeout: 120_000 }, async () => {
    const urls = sites.sites.flatMap((s) => Array.from({ length: PAGES_PER_SITE }, (_, i) => `${s.origin}/page/${i}`));
    const halves = [urls.filter((_, i) => i % 2 === 0), urls.filter((_, i) => i % 2 === 1)];
    const outputs = await Promise.all(
      halves.map((part, w) =>
        run(
          process.execPath,
          [
            ...tsEntryArgs("test/integrations/crawlee/crawlee-worker.ts"),
            JSON.stringify({ broker: broker.address, workerId: `crawlee-${w}`, urls: part, concurrency: 4 }),
          ],
          {
            timeout: 110_000,
            maxBuffer: 4 * 1024 * 1024,
          },
        ),
      ),
    );
    const reports = outputs.map(
      (o) => JSON.parse(o.stdout.trim().split("\n").at(-1) ?? "{}") as { taken: string[]; failed: string[]; leasesLeft: number },
    );
    const taken = new Set(reports.flatMap((r) => r.taken));
    expect(reports.flatMap((r) => r.failed)).toEqual([]);
    expect(taken.size).toBe(urls.length);
    expect(reports.map((r) => r.leasesLeft)).toEqual([0, 0]);
    const c = sites.counters();
    console.log(
      `crawlee: ${taken.size} pages by 2 HttpCrawler processes; the sites saw ${c.requests} requests, ${c.rateLimited} × 429, ${c.bans} bans`,
    );
    expect(countOverlaps(sites.log)).toBe(0);
    expect(c.rateLimited).toBe(0);
    expect(c.bans).toBe(0);
  });
});
