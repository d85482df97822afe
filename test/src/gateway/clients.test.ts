/**
 * Real crawlers that know nothing of ProxyBroker, through the gateway, on strict sites: Scrapy
 * (Debian's, no ProxyBroker middleware: only a proxy URL in `meta`) and Chromium (playwright-core)
 * with sticky sessions in the proxy username, over plain HTTP and over HTTPS intercepted with a
 * test CA. Behind the gateway: a broker on a real redis-server and real tinyproxies, each sending
 * from its own 127.0.0.x address; the sites (the crawl harness's, crawl/sites.ts) judge and log
 * every request by that address. Checked from the sites' own logs: no 429, no ban, never two
 * requests of one proxy on one site at once; and from the broker: every lease released.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { chromium } from "playwright-core";
import puppeteer from "puppeteer-core";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import { CONTENT_MARKER, startSites } from "../../../crawl/sites.js";
import type { Site, Sites } from "../../../crawl/sites.js";
import { Gateway, LEASE_HEADERS } from "../../../src/gateway/gateway.js";
import { HostCerts } from "../../../src/gateway/host-certs.js";
import { ConnectPorts, TargetPolicy } from "../../../src/gateway/targets.js";
import { gatewaySettings } from "../../../src/gateway/settings.js";
import { withBroker } from "../../support/with-broker.js";
import { makeCerts } from "../../support/certs.js";
import { metricValue, siteVerdict, strictRules } from "../../support/gateway-crawl.js";
import { startHttpsFront } from "../../support/gateway-https-front.js";
import type { HttpsFront } from "../../support/gateway-https-front.js";
import { startTinyproxies } from "../../support/tinyproxies.js";
import { startTestGateway } from "../../support/gateway-under-test.js";
import type { Tinyproxies } from "../../support/tinyproxies.js";

const run = promisify(execFile);
const CHROMIUM = process.env["CHROMIUM"] ?? "/usr/bin/chromium";
const PYTHON = "/usr/bin/python3";
/**
 * The gateway as the README starts it for browsers: `GATEWAY_CREDENTIALS=required npx proxybroker
 * gateway` (a request without proxy credentials is challenged with a 407, so that a browser sends
 * its username; any password), and the README's password.
 */
const README_GATEWAY = gatewaySettings({ credentials: "required" }, "gateway-clients");
const PASSWORD = "x";
/** The policy of the sites that have one, and their rule. */
const INTERVAL_MS = 200;
const PROXIES = 3;
/** Pages each browser session loads. */
const PAGES = 6;

/**
 * A Scrapy crawl with no ProxyBroker code: Scrapy's own HttpProxyMiddleware, the gateway as the
 * proxy in `meta`; no retries and every status passed on, so every answer is seen. Prints the
 * answers as JSON.
 */
const SCRAPY_SCRIPT = `
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

config = json.loads(sys.argv[1])
answers = []

class StrictSites(scrapy.Spider):
    name = "strict-sites"

    def start_requests(self):
        for url in config["urls"]:
            yield scrapy.Request(url, meta={"proxy": config["proxy"]}, dont_filter=True, errback=self.failed)

    def parse(self, response):
        answers.append({
            "url": response.url,
            "status": response.status,
            "proxy": response.headers.get("x-proxybroker-proxy", b"").decode(),
            "source": response.headers.get("x-proxybroker-source", b"").decode(),
            "content": config["marker"] in response.text,
        })

    def failed(self, failure):
        answers.append({"url": failure.request.url, "status": 0, "proxy": "", "source": "", "content": False, "error": repr(failure.value)})

process = CrawlerProcess(settings={
    "LOG_LEVEL": "ERROR",
    "TELNETCONSOLE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "RETRY_ENABLED": False,
    "HTTPERROR_ALLOW_ALL": True,
    "COOKIES_ENABLED": False,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "DOWNLOAD_DELAY": 0,
    "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
})
process.crawl(StrictSites)
process.start()
print(json.dumps(answers))
`;

interface ScrapyAnswer {
  readonly url: string;
  readonly status: number;
  readonly proxy: string;
  readonly source: string;
  readonly content: boolean;
  readonly error?: string;
}

describe("real crawlers through the gateway, on strict sites", () => {
  const b = withBroker({ kind: "redis" });
  let tiny: Tinyproxies;
  let sites: Sites;
  let front: HttpsFront;
  let gw: Gateway;
  let dir: string;
  const clients: ProxyBrokerClient[] = [];
  /** A proxy's id (`127.0.0.1:port`) → the address the sites see it from. */
  const outgoing = new Map<string, string>();

  /** Sites 0, 2 and 3 have a policy at the broker (3 through its HTTPS front); site 1 has none and a rule of one request at a time. */
  const site = (i: number): Site => {
    const s = sites.sites[i];
    if (s === undefined) throw new Error(`no site ${i}`);
    return s;
  };

  const liveLeases = async (): Promise<number> =>
    metricValue(await b.server.metrics.registry.getSingleMetricAsString("proxybroker_live_leases"), "proxybroker_live_leases");

  /** Every lease the gateway took is released: the broker knows of no live lease. */
  const expectAllReleased = async (): Promise<void> => {
    await expect.poll(liveLeases, { timeout: 3_000, interval: 50 }).toBe(0);
  };

  /** The site's own log: no 429, no ban, no overlap, no IP faster than `intervalMs`; its requests by IP. */
  const expectClean = (host: string, intervalMs: number): ReadonlyMap<string, number> => {
    const v = siteVerdict(sites, host);
    expect(v.requests).toBeGreaterThan(0);
    expect({ rateLimited: v.rateLimited, bans: v.bans, overlaps: v.overlaps }).toEqual({ rateLimited: 0, bans: 0, overlaps: 0 });
    expect(v.minGapMs).toBeGreaterThanOrEqual(intervalMs);
    return v.byIp;
  };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM)`);
    dir = await mkdtemp(join(tmpdir(), "pb-gateway-clients-"));
    const certs = await makeCerts();
    sites = await startSites({
      rules: [
        strictRules(INTERVAL_MS),
        strictRules(0),
        strictRules(INTERVAL_MS),
        strictRules(INTERVAL_MS),
        strictRules(INTERVAL_MS),
        strictRules(INTERVAL_MS),
      ],
    });
    front = await startHttpsFront({
      site: site(3).host,
      key: await certs.read(certs.serverKeyFile),
      cert: await certs.read(certs.serverCertFile),
    });
    tiny = await startTinyproxies({ count: PROXIES });
    const added = await b.admin.addProxies({ proxies: tiny.proxies.map((p) => ({ url: `http://${p.address}` })) });
    expect(added.added).toHaveLength(PROXIES);
    for (const p of tiny.proxies) outgoing.set(p.address, p.outgoing);
    // the policies: by the host (the broker's domain-key ignores the port); the HTTPS front is 127.0.0.1
    const hostOf = (s: Site): string => new URL(s.origin).hostname;
    for (const pattern of [hostOf(site(0)), hostOf(site(2)), hostOf(site(4)), hostOf(site(5)), new URL(front.origin).hostname]) {
      await b.admin.setDomainPolicy({ policy: { pattern, minInterval: durationFromMs(INTERVAL_MS) } });
    }
    const caPem = (await certs.read(certs.caFile)).toString();
    const caKey = (await certs.read(join(certs.dir, "ca.key"))).toString();
    gw = new Gateway({
      host: "127.0.0.1",
      port: 0,
      client: (pool) => {
        // no failover here: a broker call slowed by a busy machine must not open the breaker
        const c = new ProxyBrokerClient({
          address: b.address,
          pool,
          workerId: `gateway-clients-${pool}`,
          breaker: { callTimeoutMs: 10_000 },
        });
        clients.push(c);
        return c;
      },
      pool: "default",
      targets: new TargetPolicy([]),
      connectPorts: new ConnectPorts("any"),
      tokens: undefined,
      credentials: README_GATEWAY.credentials,
      waitMs: 10_000,
      maxWaitMs: 20_000,
      tunnels: { idleMs: 60_000, maxLifeMs: 600_000 },
      maxConnections: 200,
      requestTimeoutMs: 30_000,
      upstreamTimeoutMs: 10_000,
      intercept: { certs: new HostCerts(caPem, caKey), upstreamCa: [caPem] },
    });
    await gw.start();
  });

  afterAll(async () => {
    await gw?.stop();
    await Promise.all(clients.map((c) => c.close()));
    await front?.close();
    await sites?.close();
    await tiny?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("Scrapy with only a proxy URL: every page, no 429, no ban, no overlap, each answer from the proxy it names", {
    timeout: 30_000,
  }, async () => {
    const pages = 12;
    const urls = [0, 1].flatMap((i) => Array.from({ length: pages }, (_, n) => `${site(i).origin}/page/scrapy-${n}`));
    const script = join(dir, "strict_sites.py");
    await writeFile(script, SCRAPY_SCRIPT);
    const config = { urls, proxy: `http://wait-15:${PASSWORD}@${gw.address}`, marker: CONTENT_MARKER };
    const { stdout } = await run(PYTHON, [script, JSON.stringify(config)], { cwd: dir, maxBuffer: 10_000_000 });
    const answers = JSON.parse(stdout.trim().split("\n").at(-1) ?? "[]") as ScrapyAnswer[];

    expect(answers).toHaveLength(urls.length);
    expect(answers.filter((a) => a.status !== 200 || !a.content || a.source !== "broker")).toEqual([]);
    expect(new Set(answers.map((a) => a.url))).toEqual(new Set(urls));
    for (const i of [0, 1]) {
      // the site saw each page once, each from the proxy its answer named
      const byIp = expectClean(site(i).host, i === 0 ? INTERVAL_MS : 0);
      const named = new Map<string, number>();
      for (const a of answers.filter((x) => x.url.startsWith(site(i).origin))) {
        const ip = outgoing.get(a.proxy) ?? `unknown proxy ${a.proxy}`;
        named.set(ip, (named.get(ip) ?? 0) + 1);
      }
      expect(named).toEqual(byIp);
      // 16 requests at once on 3 proxies: the gateway spread them over every proxy
      expect(byIp.size).toBe(PROXIES);
    }
    await expectAllReleased();
  });

  it("Chromium with sticky sessions, over HTTP and intercepted HTTPS: each session keeps its proxy, the sites see no 429 and no overlap", {
    timeout: 40_000,
  }, async () => {
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
      const launched = browser;
      const began = Date.now();
      /** What the browser asked for and how it ended, for a failure's message. */
      const events: string[] = [];
      const browse = async (session: string, origin: string) => {
        const context = await launched.newContext({
          proxy: { server: `http://${gw.address}`, username: `session-${session}`, password: PASSWORD },
          // the gateway's host certificates are signed by the test CA, which Chromium does not know
          ignoreHTTPSErrors: true,
        });
        try {
          // Chromium's own favicon fetches stay in the browser, so that the site's log holds exactly
          // the pages (a favicon fetch cancelled by the next navigation releases its lease at once:
          // gateway.test.ts "releases an intercepted request's lease as soon as its client goes away")
          await context.route("**/favicon.ico", (route) => route.fulfill({ status: 404, body: "" }));
          context.on("request", (r) => events.push(`${Date.now() - began} ${session} > ${r.url()}`));
          context.on("requestfinished", (r) => events.push(`${Date.now() - began} ${session} < ${r.url()}`));
          context.on("requestfailed", (r) => events.push(`${Date.now() - began} ${session} ! ${r.url()} ${r.failure()?.errorText}`));
          const tab = await context.newPage();
          const seen: Array<{ status: number; proxy: string | undefined; source: string | undefined; content: boolean; ms: number }> = [];
          for (let n = 0; n < PAGES; n++) {
            const started = Date.now();
            const res = await tab.goto(`${origin}/page/${session}-${n}`);
            const headers = (await res?.allHeaders()) ?? {};
            seen.push({
              status: res?.status() ?? 0,
              proxy: headers[LEASE_HEADERS.proxy],
              source: headers[LEASE_HEADERS.source],
              content: (await tab.content()).includes(CONTENT_MARKER),
              ms: Date.now() - started,
            });
          }
          return seen;
        } finally {
          await context.close();
        }
      };
      // two browser contexts at once: one session over plain HTTP, one over HTTPS (intercepted)
      const [plain, secure] = await Promise.all([browse("plain1", site(2).origin), browse("secure1", front.origin)]);
      const diagnosis = async (): Promise<string> =>
        [
          JSON.stringify({ plain, secure }),
          ...events,
          ...sites.log
            .filter((e) => e.site === site(2).host || e.site === site(3).host)
            .map((e) => `${e.site} ${e.ip} ${e.start - began}-${e.end - began} ${e.answer}`),
          await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total"),
        ].join("\n");
      for (const seen of [plain, secure]) {
        expect(
          seen.map((s) => [s.status, s.content, s.source]),
          await diagnosis(),
        ).toEqual(Array.from({ length: PAGES }, () => [200, true, "broker"]));
        // a sticky session keeps its proxy
        expect(new Set(seen.map((s) => s.proxy)).size).toBe(1);
      }
      // ... and the sites saw each session from that one proxy's address only, never too fast
      for (const [i, seen] of [
        [2, plain],
        [3, secure],
      ] as const) {
        const byIp = expectClean(site(i).host, INTERVAL_MS);
        expect([...byIp.keys()]).toEqual([outgoing.get(seen[0]?.proxy ?? "")]);
        expect(byIp.get(outgoing.get(seen[0]?.proxy ?? "") ?? "")).toBe(PAGES);
      }
    } finally {
      await browser?.close();
    }
    const counted = await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total");
    expect(metricValue(counted, "proxybroker_gateway_requests_total", '{kind="intercepted",outcome="SUCCESS"}')).toBeGreaterThanOrEqual(
      PAGES,
    );
    expect(metricValue(counted, "proxybroker_gateway_requests_total", '{kind="http",outcome="SUCCESS"}')).toBeGreaterThanOrEqual(PAGES);
    await expectAllReleased();
  });

  it("Puppeteer with page.authenticate: the session reaches the gateway, the site sees one IP", { timeout: 40_000 }, async () => {
    const browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      // the sites are on loopback, which Chromium never proxies unless told (Playwright tells it too)
      args: ["--no-sandbox", "--disable-gpu", `--proxy-server=http://${gw.address}`, "--proxy-bypass-list=<-loopback>"],
    });
    try {
      const tab = await browser.newPage();
      await tab.authenticate({ username: "session-pup1", password: PASSWORD });
      // Chromium's own favicon fetches stay in the browser (the site's log holds exactly the pages)
      await tab.setRequestInterception(true);
      tab.on("request", (r) => void (r.url().endsWith("/favicon.ico") ? r.respond({ status: 404, body: "" }) : r.continue()));
      const proxies: string[] = [];
      for (let n = 0; n < PAGES; n++) {
        const res = await tab.goto(`${site(4).origin}/page/pup1-${n}`);
        expect(res?.status()).toBe(200);
        expect(await tab.content()).toContain(CONTENT_MARKER);
        proxies.push(res?.headers()[LEASE_HEADERS.proxy] ?? "");
      }
      expect(new Set(proxies).size).toBe(1);
      const byIp = expectClean(site(4).host, INTERVAL_MS);
      expect([...byIp]).toEqual([[outgoing.get(proxies[0] ?? ""), PAGES]]);
    } finally {
      await browser.close();
    }
    await expectAllReleased();
  });

  it("a gateway that asks no credentials: a browser's session is lost, and the gateway says so (a metric, a log line)", {
    timeout: 40_000,
  }, async () => {
    const warned: string[] = [];
    const open = await startTestGateway({
      address: b.address,
      workerId: "gateway-clients-open",
      client: { breaker: { callTimeoutMs: 10_000 } },
      over: { credentials: "optional", waitMs: 10_000, maxWaitMs: 20_000, onBrowserWithoutCredentials: (ua) => warned.push(ua) },
    });
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
    try {
      const context = await browser.newContext({
        proxy: { server: `http://${open.gw.address}`, username: "session-lost1", password: PASSWORD },
      });
      await context.route("**/favicon.ico", (route) => route.fulfill({ status: 404, body: "" }));
      const tab = await context.newPage();
      for (let n = 0; n < 3; n++) expect((await tab.goto(`${site(5).origin}/page/lost1-${n}`))?.status()).toBe(200);
      await context.close();
      const counted = await open.gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_browser_without_credentials_total");
      expect(metricValue(counted, "proxybroker_gateway_browser_without_credentials_total")).toBeGreaterThanOrEqual(3);
      // said once (at most once a minute), naming the browser
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatch(/Chrome/);
    } finally {
      await browser.close();
      await open.stop();
    }
  });

  // Its own gateway: a browser's late request (one already sent when its context closed) would count on a
  // shared one, and say nothing about curl.
  it("a client that sends credentials from its proxy URL (curl, requests, Scrapy) is not counted as a browser", {
    timeout: 20_000,
  }, async () => {
    const open = await startTestGateway({
      address: b.address,
      workerId: "gateway-clients-curl",
      over: { credentials: "optional", onBrowserWithoutCredentials: () => undefined },
    });
    try {
      const { stdout: status } = await run("curl", [
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-x",
        `http://session-c1:x@${open.gw.address}`,
        "-A",
        "Mozilla/5.0 (X11)",
        `${site(5).origin}/page/curl-1`,
      ]);
      expect(status).toBe("200");
      const counted = await open.gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_browser_without_credentials_total");
      expect(metricValue(counted, "proxybroker_gateway_browser_without_credentials_total")).toBe(0);
    } finally {
      await open.stop();
    }
  });
});
