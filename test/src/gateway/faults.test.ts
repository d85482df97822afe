/**
 * The gateway through faults, with real parts: a broker process on a real redis-server, real
 * tinyproxies each sending from its own 127.0.0.x address, a strict site of the crawl harness
 * (crawl/sites.ts) that logs every request by that address. The gateway is stopped with SIGTERM
 * as a process of its own; an upstream proxy hangs; the broker is SIGKILLed mid-crawl and started
 * again.
 */
import { createServer } from "node:net";
import type { Server, Socket } from "node:net";
import { connect } from "node:net";
import * as grpc from "@grpc/grpc-js";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ProxyBrokerClient } from "@proxybroker/sdk";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { hostFromUrl } from "@proxybroker/sdk/model";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { startGatewayProcess } from "../../../crawl/gateway-process.js";
import { CONTENT_MARKER, startSites } from "../../../crawl/sites.js";
import type { Site, Sites } from "../../../crawl/sites.js";
import { LEASE_HEADERS } from "../../../src/gateway/gateway.js";
import type { Gateway, GatewayOptions } from "../../../src/gateway/gateway.js";
import { brokerProcess, freePort } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { startTestGateway } from "../../support/gateway-under-test.js";
import type { TestGateway } from "../../support/gateway-under-test.js";
import { getThrough, metricValue, siteVerdict, strictRules } from "../../support/gateway-crawl.js";
import type { GatewayAnswer } from "../../support/gateway-crawl.js";
import { withRedis } from "../../support/with-redis.js";
import { startTinyproxies } from "../../support/tinyproxies.js";
import type { Tinyproxies } from "../../support/tinyproxies.js";

const INTERVAL_MS = 150;
const PROXIES = 3;
/** The worker id crawl/gateway-process.ts gives the gateway process. */
const GATEWAY_PROCESS_WORKER = "crawl-gateway";
const STREAM_END = "</pre></div></body></html>";

/** An upstream "proxy" that accepts connections and never answers. */
async function startHangingProxy(): Promise<{ readonly url: string; close(): Promise<void> }> {
  const held = new Set<Socket>();
  const server: Server = createServer((s) => {
    held.add(s);
    s.on("error", () => undefined);
    s.once("close", () => held.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of held) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A raw CONNECT through the gateway: the first line of its answer ("" when it closed without one), and when it came. */
function rawConnect(gateway: string, authority: string, auth: string): Promise<{ readonly line: string; readonly ms: number }> {
  const [host, port] = gateway.split(":");
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = connect(Number(port), host ?? "127.0.0.1");
    let got = "";
    const done = (): void => {
      socket.destroy();
      resolve({ line: got.split("\r\n")[0] ?? "", ms: Date.now() - started });
    };
    socket.on("data", (d: Buffer) => {
      got += d.toString();
      if (got.includes("\r\n")) done();
    });
    socket.on("error", done);
    socket.on("close", done);
    socket.setTimeout(10_000, done);
    const credentials = Buffer.from(auth).toString("base64");
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: Basic ${credentials}\r\n\r\n`);
  });
}

/** Whether a connection to `address` is refused (nothing listens there any more). */
function refused(address: string): Promise<boolean> {
  const [host, port] = address.split(":");
  return new Promise((resolve) => {
    const s = connect(Number(port), host ?? "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", (err: NodeJS.ErrnoException) => resolve(err.code === "ECONNREFUSED"));
  });
}

describe("the gateway through faults", () => {
  const redis = withRedis();
  let broker: BrokerProcess;
  let metricsAddress: string;
  let channel: grpc.Client;
  let admin: ClientOf<typeof ProxyAdmin>;
  let api: ClientOf<typeof ProxyBroker>;
  let tiny: Tinyproxies;
  let sites: Sites;
  let site: Site;
  const gateways: TestGateway[] = [];

  /** The broker process's metrics text. */
  const brokerMetrics = async (): Promise<string> => (await fetch(`http://${metricsAddress}/metrics`)).text();
  const liveLeases = async (): Promise<number> => metricValue(await brokerMetrics(), "proxybroker_live_leases");
  /** The workers the broker counts as live in the default pool. */
  const liveWorkers = async (): Promise<string[]> =>
    (await api.getPoolSnapshot({ pool: "default", workersOnly: true })).liveWorkers.map((w) => w.workerId);

  /** An in-process gateway in front of the broker process; `client` options are the SDK's. */
  const startGateway = async (
    workerId: string,
    over: Partial<GatewayOptions> = {},
    client: Partial<ConstructorParameters<typeof ProxyBrokerClient>[0]> = {},
  ): Promise<{ gw: Gateway; clientOf: (pool: string) => ProxyBrokerClient | undefined }> => {
    const t = await startTestGateway({
      address: broker.address,
      workerId,
      client,
      over: { waitMs: 5_000, maxWaitMs: 10_000, upstreamTimeoutMs: 5_000, ...over },
    });
    gateways.push(t);
    return { gw: t.gw, clientOf: (pool) => t.clients.get(pool) };
  };

  const expectSiteClean = (): void => {
    const v = siteVerdict(sites, site.host);
    expect({ rateLimited: v.rateLimited, bans: v.bans, overlaps: v.overlaps }).toEqual({ rateLimited: 0, bans: 0, overlaps: 0 });
    expect(v.minGapMs).toBeGreaterThanOrEqual(INTERVAL_MS);
  };

  beforeAll(async () => {
    sites = await startSites({ rules: [strictRules(INTERVAL_MS)] });
    site = sites.sites[0] as Site;
    tiny = await startTinyproxies({ count: PROXIES });
    metricsAddress = `127.0.0.1:${await freePort()}`;
    // short lease TTLs: a lease given up when the broker dies ends within a second
    broker = await brokerProcess({ redisUrl: redis.url(), env: { METRICS_ADDRESS: metricsAddress, LEASE_TTL_DEFAULT_MS: "1000" } });
    await broker.start();
    channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    admin = createClient(ProxyAdmin, channel);
    api = createClient(ProxyBroker, channel);
    await admin.addProxies({ proxies: tiny.proxies.map((p) => ({ url: `http://${p.address}` })) });
    await admin.setDomainPolicy({ policy: { pattern: new URL(site.origin).hostname, minInterval: durationFromMs(INTERVAL_MS) } });
  });

  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.stop()));
    sites.reset();
  });

  afterAll(async () => {
    channel?.close();
    await broker?.stop();
    await sites?.close();
    await tiny?.stop();
  });

  it("SIGTERM: no new connections, the requests in flight finish, their leases are released, the gateway leaves the pool", {
    timeout: 30_000,
  }, async () => {
    const gw = await startGatewayProcess(broker.address);
    try {
      // its SDK client took a snapshot at start: the broker counts it among the live workers
      await expect.poll(liveWorkers, { timeout: 5_000 }).toContain(GATEWAY_PROCESS_WORKER);
      const successesBefore = metricValue(await brokerMetrics(), "proxybroker_releases_total", '{outcome="SUCCESS"}');
      let finished = 0;
      const streams = Array.from({ length: PROXIES }, () =>
        getThrough(gw.address, `${site.origin}/stream?ms=1500`)
          .catch((err: unknown): GatewayAnswer => ({ status: -1, headers: {}, body: String(err) }))
          .finally(() => finished++),
      );
      // every stream is running at the site (one per proxy)
      await expect.poll(() => sites.log.filter((e) => e.answer === "stream").length, { timeout: 5_000, interval: 20 }).toBe(PROXIES);
      const stopped = gw.stop(); // SIGTERM, then waits for the exit
      // it stops listening at once, while the streams still run
      await expect.poll(() => refused(gw.address), { timeout: 1_000, interval: 25 }).toBe(true);
      expect(finished).toBe(0);
      const answers: GatewayAnswer[] = await Promise.all(streams);
      await stopped;
      for (const a of answers) {
        expect(a.status).toBe(200);
        expect(a.headers[LEASE_HEADERS.source]).toBe("broker");
        expect(a.body.startsWith("<html><body>")).toBe(true);
        expect(a.body.endsWith(STREAM_END)).toBe(true);
      }
      expect(new Set(answers.map((a) => a.headers[LEASE_HEADERS.proxy])).size).toBe(PROXIES);
      // it drained and stopped on its own (the helper SIGKILLs a gateway still running 5 s after SIGTERM)
      expect(gw.output()).toContain("SIGTERM: closing the gateway");
      expect(gw.output()).toContain("gateway stopped");
      // the site served every stream to its end, one per proxy at a time
      for (const e of sites.log.filter((x) => x.answer === "stream")) expect(e.end - e.start).toBeGreaterThanOrEqual(1_500);
      expectSiteClean();
      // the broker: three SUCCESS releases, no live lease, the gateway's worker left the pool
      const after = await brokerMetrics();
      expect(metricValue(after, "proxybroker_releases_total", '{outcome="SUCCESS"}') - successesBefore).toBe(PROXIES);
      expect(metricValue(after, "proxybroker_live_leases")).toBe(0);
      expect(await liveWorkers()).not.toContain(GATEWAY_PROCESS_WORKER);
    } finally {
      await gw.stop();
    }
  });

  it("SIGTERM twice a millisecond apart (a process group signalled: docker stop, systemd): one shutdown, the requests in flight still finish", {
    timeout: 30_000,
  }, async () => {
    const gw = await startGatewayProcess(broker.address);
    try {
      const streams = Array.from({ length: PROXIES }, () =>
        getThrough(gw.address, `${site.origin}/stream?ms=1500`).catch(
          (err: unknown): GatewayAnswer => ({ status: -1, headers: {}, body: String(err) }),
        ),
      );
      await expect.poll(() => sites.log.filter((e) => e.answer === "stream").length, { timeout: 5_000, interval: 20 }).toBe(PROXIES);
      gw.signal("SIGTERM");
      await new Promise((r) => setTimeout(r, 1));
      gw.signal("SIGTERM");
      const answers = await Promise.all(streams);
      for (const a of answers) {
        expect(a.status).toBe(200);
        expect(a.body.endsWith(STREAM_END)).toBe(true);
      }
      await gw.exited();
      expect(gw.output()).not.toContain("again: closing every connection now");
      expect(gw.output()).toContain("gateway stopped");
    } finally {
      await gw.stop();
    }
  });

  it("an upstream proxy that hangs: a request or a CONNECT fails within the gateway's timeout, and the proxy's score drops each time", {
    timeout: 20_000,
  }, async () => {
    const hanging = await startHangingProxy();
    try {
      // the hanging proxy alone in a pool of its own: every lease of the gateway's requests there is its
      await admin.addProxies({ pool: "hang", proxies: [{ url: hanging.url }] });
      const score = async (): Promise<number> => (await admin.listProxies({ pool: "hang" })).proxies[0]?.score ?? Number.NaN;
      const { gw } = await startGateway("gateway-hang", { upstreamTimeoutMs: 1_000, waitMs: 0 });
      const auth = "pool-hang:x";
      let last = await score();
      expect(last).toBe(50);
      const dropped = async (): Promise<void> => {
        await expect.poll(score, { timeout: 3_000, interval: 50 }).toBeLessThan(last);
        last = await score();
      };

      // plain HTTP: a 504 after the timeout
      const started = Date.now();
      const plain = await getThrough(gw.address, `${site.origin}/page/hang`, { auth });
      expect(plain.status).toBe(504);
      expect(plain.headers[LEASE_HEADERS.proxy]).toBe(new URL(hanging.url).host);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
      expect(Date.now() - started).toBeLessThan(2_500);
      await dropped();

      // a CONNECT tunnel: the upstream proxy never answers the CONNECT
      const tunnel = await rawConnect(gw.address, `127.0.0.1:${new URL(site.origin).port}`, auth);
      expect(tunnel.line).toMatch(/^HTTP\/1\.1 504 /);
      expect(tunnel.ms).toBeGreaterThanOrEqual(1_000);
      expect(tunnel.ms).toBeLessThan(2_500);
      await expect.poll(() => gw.openTunnels, { timeout: 2_000 }).toBe(0);
      await dropped();

      // neither lease is held any more
      await expect.poll(liveLeases, { timeout: 3_000, interval: 50 }).toBe(0);
    } finally {
      await hanging.close();
    }
  });

  it("broker SIGKILLed mid-crawl: the gateway serves from its fallback pool, then from the broker again once it is back", {
    timeout: 40_000,
  }, async () => {
    const { gw, clientOf } = await startGateway(
      "gateway-outage",
      {},
      {
        breaker: { callTimeoutMs: 1_000, resetTimeoutMs: 300, volumeThreshold: 1 },
        fallback: { snapshotRefreshMs: 200, membershipRefreshMs: 200 },
      },
    );
    interface Seen {
      readonly t: number;
      readonly status: number;
      readonly source: string;
      readonly content: boolean;
    }
    const seen: Seen[] = [];
    let crawling = true;
    const crawl = async (loop: number): Promise<void> => {
      for (let n = 0; crawling; n++) {
        const t = Date.now();
        try {
          const a = await getThrough(gw.address, `${site.origin}/page/outage-${loop}-${n}`);
          seen.push({
            t,
            status: a.status,
            source: String(a.headers[LEASE_HEADERS.source] ?? ""),
            content: a.body.includes(CONTENT_MARKER),
          });
        } catch {
          seen.push({ t, status: 0, source: "", content: false });
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    const served = (since: number, source: string): number =>
      seen.filter((s) => s.t >= since && s.status === 200 && s.content && s.source === source).length;
    const began = Date.now();
    const marks: string[] = [];
    /** What the crawl saw, for a failure's message: [ms since the start, status, source] and the marks. */
    const timeline = (): string => `${marks.join(", ")}; ${JSON.stringify(seen.map((x) => [x.t - began, x.status, x.source]))}`;
    const polled = async (what: string, check: () => Promise<unknown>): Promise<void> => {
      try {
        await check();
      } catch (err) {
        throw new Error(`${what}: ${String(err)} — ${timeline()}`);
      }
    };
    const loops = [0, 1, 2].map(crawl);
    try {
      // the crawl leases through the broker until the gateway's fallback pool may serve the site
      await polled("broker answers", () => expect.poll(() => served(0, "broker"), { timeout: 5_000 }).toBeGreaterThanOrEqual(PROXIES));
      await polled("fallback ready", () =>
        expect.poll(() => clientOf("default")?.fallback.readyDomains.includes(hostFromUrl(site.origin)), { timeout: 5_000 }).toBe(true),
      );
      await broker.kill();
      const killedAt = Date.now();
      marks.push(`killed at ${killedAt - began}`);
      // answers keep coming, from the fallback pool
      await polled("fallback answers", () =>
        expect.poll(() => served(killedAt, "fallback"), { timeout: 5_000, interval: 50 }).toBeGreaterThanOrEqual(2 * PROXIES),
      );
      await broker.start();
      const backAt = Date.now();
      marks.push(`listening again at ${backAt - began}`);
      // ... and from the broker again once it is back
      await polled("broker answers again", () =>
        expect.poll(() => served(backAt, "broker"), { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(2 * PROXIES),
      );
    } finally {
      crawling = false;
      await Promise.all(loops);
    }
    // the site never saw a proxy too soon or twice at once, through both switches
    expectSiteClean();
    const failed = seen.filter((s) => s.status !== 200 || !s.content);
    expect(failed.length, timeline()).toBeLessThanOrEqual(PROXIES);
    await expect.poll(liveLeases, { timeout: 3_000, interval: 50 }).toBe(0);
  });
});
