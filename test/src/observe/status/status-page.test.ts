/**
 * The status page in a real browser (Debian's chromium through playwright-core): a broker process
 * with proxies in every state, leases granted and released with bans and cool-downs; the page's
 * figures must match what ProxyAdmin says, and it refreshes by itself. The screenshot goes to
 * .tmp/status-page.png (docs/status-page.png, in docs/operations.md, shows one taken of a broker under load).
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { chromium } from "playwright-core";
import type { Browser } from "playwright-core";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { OutcomeKind, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { brokerProcess, freePort } from "../../../support/broker-process.js";
import type { BrokerProcess } from "../../../support/broker-process.js";

const CHROMIUM = process.env["CHROMIUM"] ?? "/usr/bin/chromium";

describe("the status page", () => {
  let broker: BrokerProcess;
  let browser: Browser;
  let dir: string;
  let page: string;
  let channel: grpc.Client;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM)`);
    dir = await mkdtemp(join(tmpdir(), "pb-status-"));
    const file = join(dir, "proxies.txt");
    const lines = Array.from({ length: 12 }, (_, i) => `127.0.0.1:${20_000 + i} tier=${i < 8 ? "datacenter" : "residential"}`);
    await writeFile(file, lines.join("\n"));
    const metricsPort = await freePort();
    page = `http://127.0.0.1:${metricsPort}/`;
    broker = await brokerProcess({ redisUrl: "", env: { PROXIES_FILE: file, METRICS_ADDRESS: `127.0.0.1:${metricsPort}` } });
    await broker.start();
    channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    channel?.close();
    await broker?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("shows the pool at a glance, matching ProxyAdmin, and refreshes by itself", { timeout: 60_000 }, async () => {
    const admin = createClient(ProxyAdmin, channel);
    const api = createClient(ProxyBroker, channel);
    await admin.disableProxies({ ids: ["127.0.0.1:20000"] });
    await admin.banProxies({ ids: ["127.0.0.1:20001"], ttl: durationFromMs(600_000) });
    // two workers crawl two sites: successes, a rate limit, a block
    const outcomes = [
      OutcomeKind.SUCCESS,
      OutcomeKind.SUCCESS,
      OutcomeKind.RATE_LIMITED,
      OutcomeKind.SUCCESS,
      OutcomeKind.BLOCKED,
      OutcomeKind.SUCCESS,
    ];
    for (const [i, kind] of outcomes.entries()) {
      const { lease } = await api.acquireLease({
        workerId: i % 2 === 0 ? "crawler-a" : "crawler-b",
        requestId: `r${i}`,
        domain: i < 3 ? "shop.example" : "news.example",
      });
      await api.releaseLease({
        leaseId: lease!.leaseId,
        fencingToken: lease!.fencingToken,
        outcome: { kind, ...(kind === OutcomeKind.RATE_LIMITED ? { retryAfter: durationFromMs(30_000) } : {}) },
      });
    }
    const stats = await admin.getPoolStats({ pool: "default" });
    const tab = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    await tab.goto(page);
    await tab.waitForSelector("section.pool[data-pool=default]");
    const card = (state: string) => tab.textContent(`section.pool[data-pool=default] .card[data-state=${state}] .n`);
    expect(Number(await card("ACTIVE"))).toBe(stats.active);
    expect(Number(await card("DISABLED"))).toBe(1);
    expect(Number(await card("QUARANTINED"))).toBe(1);
    expect(Number(await tab.textContent("[data-figure=workers]"))).toBe(2);
    const domains = await tab.$$eval("[data-table=domains] tr", (rows) =>
      rows.slice(1).map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent ?? "")),
    );
    expect(domains).toEqual(
      expect.arrayContaining([
        // the 429 raised the site's interval (adaptive pacing starts at 1 s)
        ["shop.example", "3", "0", "1", "1.0 s"],
        ["news.example", "3", "1", "0", "–"],
      ]),
    );
    const workers = await tab.$$eval("[data-table=workers] tr", (rows) =>
      rows.slice(1).map((r) => r.querySelector("td")?.textContent ?? ""),
    );
    expect(workers.sort()).toEqual(["crawler-a", "crawler-b"]);
    // by itself, the next refresh shows what happened since
    const before = Number(await tab.getAttribute("body", "data-updated"));
    await admin.enableProxies({ ids: ["127.0.0.1:20000"] });
    await tab.waitForFunction(`Number(document.body.dataset.updated) > ${before}`, undefined, { timeout: 10_000 });
    await tab.waitForFunction(`document.querySelector(".card[data-state=DISABLED] .n")?.textContent === "0"`, undefined, {
      timeout: 10_000,
    });
    await mkdir(".tmp", { recursive: true });
    await tab.screenshot({ path: ".tmp/status-page.png", fullPage: true });
    await tab.close();
  });

  it("lists the domain policies with their isolation group and affinity window", { timeout: 60_000 }, async () => {
    const admin = createClient(ProxyAdmin, channel);
    await admin.setDomainPolicy({
      policy: { pattern: "wildberries.ru", isolationGroup: "marketplaces", affinityWindow: durationFromMs(600_000) },
    });
    await admin.setDomainPolicy({ policy: { pattern: "ozon.ru", isolationGroup: "marketplaces" } });
    await admin.setDomainPolicy({ policy: { pattern: "*.example.com", group: "example" } });
    const tab = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    await tab.goto(page);
    // the page polls status.json (built at most once a second): wait for the refresh that has them
    await tab.waitForFunction(`document.querySelector("[data-table=policies]")?.textContent.includes("wildberries.ru")`, undefined, {
      timeout: 10_000,
    });
    const rows = await tab.$$eval("[data-table=policies] tr", (trs) =>
      trs.map((r) => [...r.querySelectorAll("th, td")].map((c) => c.textContent ?? "")),
    );
    expect(rows[0]).toEqual(["pattern", "domain-key group", "isolation"]);
    expect(rows.slice(1)).toEqual(
      expect.arrayContaining([
        ["wildberries.ru", "–", "marketplaces, affinity 10 min"],
        ["ozon.ru", "–", "marketplaces"],
        ["*.example.com", "example", "–"],
      ]),
    );
    await tab.close();
  });
});
