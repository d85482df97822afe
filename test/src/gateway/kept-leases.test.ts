/**
 * Kept leases (src/gateway/kept-leases.ts): a lease the broker granted reusable (its pair known
 * not to be paced: a policy applies that sets no interval) whose request succeeded is kept idle for the next request of the same host, and given
 * back when the broker asks for it (LeaseWanted), when idle too long, when a request through it
 * fails, and when the gateway stops. Against a broker on a real redis-server, real tinyproxies
 * (each sending from its own 127.0.0.x address, so the sites see which proxy came), and sites on
 * loopback; what was kept is read from the gateway's metrics, what is held from the broker's and
 * from a second worker's acquires.
 */
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import { LEASE_HEADERS } from "../../../src/gateway/gateway.js";
import type { Gateway, GatewayOptions } from "../../../src/gateway/gateway.js";
import { HostCerts } from "../../../src/gateway/host-certs.js";
import { GatewaySettingsError, gatewaySettings } from "../../../src/gateway/settings.js";
import { makeCerts } from "../../support/certs.js";
import type { TestCerts } from "../../support/certs.js";
import { getThrough, metricValue } from "../../support/gateway-crawl.js";
import { startTestGateway } from "../../support/gateway-under-test.js";
import type { TestGateway } from "../../support/gateway-under-test.js";
import { startTinyproxies } from "../../support/tinyproxies.js";
import type { Tinyproxies } from "../../support/tinyproxies.js";
import { withBroker } from "../../support/with-broker.js";

const run = promisify(execFile);

describe("kept leases", () => {
  const b = withBroker({ kind: "redis" });
  let tiny: Tinyproxies;
  let site: Server;
  let base: string;
  /** The same site on another port: another host:port, the same host (and domain-key). */
  let site2: Server;
  let base2: string;
  let tls: Server;
  let tlsBase: string;
  let certs: TestCerts;
  /** Every request the plain-HTTP site got: the client address (the proxy's outgoing one), its path, when. */
  const hits: { readonly ip: string; readonly url: string; readonly at: number }[] = [];
  const gateways: TestGateway[] = [];
  const clients: ProxyBrokerClient[] = [];
  let pools = 0;

  /**
   * A pool of its own for a test (its policies, leases and pacing touch no other test's), with the
   * first `n` tinyproxies, and a policy for every host that sets no interval (the operator says
   * its sites are not paced) unless `configured` is false.
   */
  const newPool = async (n: 1 | 2, { configured = true } = {}): Promise<string> => {
    const pool = `kept-${++pools}`;
    await b.admin.addProxies({ pool, proxies: tiny.proxies.slice(0, n).map((p) => ({ url: `http://${p.address}` })) });
    if (configured) await b.admin.setDomainPolicy({ pool, policy: { pattern: "*" } });
    return pool;
  };

  const startGateway = async (pool: string, keep: GatewayOptions["keep"], over: Partial<GatewayOptions> = {}): Promise<Gateway> => {
    const t = await startTestGateway({
      address: b.address,
      workerId: `kept-gateway-${gateways.length}`,
      over: { pool, ...(keep === undefined ? {} : { keep }), ...over },
    });
    gateways.push(t);
    return t.gw;
  };

  /** Another worker of `pool` on the same broker. */
  const worker = (pool: string, name: string): ProxyBrokerClient => {
    const c = new ProxyBrokerClient({ address: b.address, pool, workerId: name });
    clients.push(c);
    return c;
  };

  /** A sample of the gateway's metrics (0 when absent). */
  const gatewayMetric = async (gw: Gateway, name: string, labels = ""): Promise<number> =>
    metricValue(await gw.metrics.registry.metrics(), name, labels);
  const keptNow = (gw: Gateway): Promise<number> => gatewayMetric(gw, "proxybroker_gateway_kept_leases");
  const keptUses = (gw: Gateway, kind: "http" | "intercepted"): Promise<number> =>
    gatewayMetric(gw, "proxybroker_gateway_kept_lease_uses_total", `{kind="${kind}"}`);
  /** Leases the broker knows to be live (every pool). */
  const live = async (): Promise<number> =>
    metricValue(await b.server.metrics.registry.getSingleMetricAsString("proxybroker_live_leases"), "proxybroker_live_leases");

  const interception = async () => {
    const caPem = (await certs.read(certs.caFile)).toString();
    const caKey = (await certs.read(join(certs.dir, "ca.key"))).toString();
    return { certs: new HostCerts(caPem, caKey), upstreamCa: [caPem] };
  };

  beforeAll(async () => {
    const serve = (req: IncomingMessage, res: ServerResponse): void => {
      hits.push({ ip: req.socket.remoteAddress ?? "", url: req.url ?? "", at: Date.now() });
      if (req.url === "/slow") {
        setTimeout(() => res.writeHead(200, { "content-type": "text/html" }).end("<p>slow page</p>"), 400);
        return;
      }
      if (req.url === "/429") res.writeHead(429, { "content-type": "text/html", "retry-after": "1" }).end("slow down");
      else res.writeHead(200, { "content-type": "text/html" }).end("<div class='price'>9.99</div>");
    };
    site = createServer(serve);
    await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    site2 = createServer(serve);
    await new Promise<void>((r) => site2.listen(0, "127.0.0.1", r));
    base2 = `http://127.0.0.1:${(site2.address() as AddressInfo).port}`;
    certs = await makeCerts();
    tls = createTlsServer({ key: await certs.read(certs.serverKeyFile), cert: await certs.read(certs.serverCertFile) }, (_req, res) =>
      res.writeHead(200, { "content-type": "text/html" }).end("secure page"),
    );
    await new Promise<void>((r) => tls.listen(0, "127.0.0.1", r));
    tlsBase = `https://localhost:${(tls.address() as AddressInfo).port}`;
    tiny = await startTinyproxies({ count: 2 });
  });
  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.stop()));
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await tiny?.stop();
    site?.closeAllConnections();
    await new Promise<void>((r) => (site === undefined ? r() : site.close(() => r())));
    site2?.closeAllConnections();
    await new Promise<void>((r) => (site2 === undefined ? r() : site2.close(() => r())));
    tls?.closeAllConnections();
    await new Promise<void>((r) => (tls === undefined ? r() : tls.close(() => r())));
  });

  it("serves sequential requests of an unpaced host through one kept lease, without the broker", async () => {
    const pool = await newPool(2);
    const gw = await startGateway(pool, { idleMs: 2_000, maxMs: 10_000 });
    const from = hits.length;
    const used: string[] = [];
    for (let i = 0; i < 5; i++) {
      const a = await getThrough(gw.address, `${base}/page${i}`);
      expect(a.status).toBe(200);
      expect(a.body).toContain("9.99");
      used.push(String(a.headers[LEASE_HEADERS.proxy]));
    }
    // one proxy for the five, as the site saw it too
    expect(new Set(used).size).toBe(1);
    expect(new Set(hits.slice(from).map((h) => h.ip)).size).toBe(1);
    // the first request leased, the four others went through the kept lease
    expect(await keptUses(gw, "http")).toBe(4);
    expect(await keptNow(gw)).toBe(1);
    expect(await live()).toBe(1);
    expect(await gatewayMetric(gw, "proxybroker_gateway_requests_total", '{kind="http",outcome="SUCCESS"}')).toBe(5);
  });

  it("never keeps a lease of a paced host: its pacing stays with the broker", async () => {
    // the control: the same requests to an unpaced host go through a kept lease
    const unpaced = await newPool(1);
    const control = await startGateway(unpaced, { idleMs: 2_000, maxMs: 10_000 });
    for (let i = 0; i < 3; i++) expect((await getThrough(control.address, `${base}/u${i}`)).status).toBe(200);
    expect(await keptUses(control, "http")).toBe(2);
    const pool = await newPool(1);
    await b.admin.setDomainPolicy({ pool, policy: { pattern: "127.0.0.1", minInterval: durationFromMs(200) } });
    const gw = await startGateway(pool, { idleMs: 2_000, maxMs: 10_000 });
    const from = hits.length;
    for (let i = 0; i < 4; i++) {
      expect((await getThrough(gw.address, `${base}/p${i}`)).status).toBe(200);
      // not kept: released at once
      expect(await keptNow(gw)).toBe(0);
    }
    expect(await keptUses(gw, "http")).toBe(0);
    // every request had a lease of its own, paced by the broker: arrivals at least ~200 ms apart
    const arrivals = hits.slice(from).map((h) => h.at);
    expect(arrivals).toHaveLength(4);
    for (let i = 1; i < arrivals.length; i++) expect((arrivals[i] ?? 0) - (arrivals[i - 1] ?? 0)).toBeGreaterThanOrEqual(180);
  });

  it("never keeps a lease of a host no policy names: its pacing is not known until adaptive pacing learned it", async () => {
    const pool = await newPool(1, { configured: false });
    const gw = await startGateway(pool, { idleMs: 2_000, maxMs: 10_000 });
    for (let i = 0; i < 3; i++) {
      expect((await getThrough(gw.address, `${base}/n${i}`)).status).toBe(200);
      // not kept: released at once, so the broker paces the next request of the pair
      expect(await keptNow(gw)).toBe(0);
    }
    expect(await keptUses(gw, "http")).toBe(0);
    // the broker holds nothing for the gateway: another worker gets the only proxy at once
    const other = await worker(pool, "kept-other").acquire(`${base}/x`, { maxWaitMs: 0 });
    expect(other.reusable).toBe(false);
    await other.release({ kind: "SUCCESS" });
    // once a policy names the host (no interval), the same requests go through one kept lease
    await b.admin.setDomainPolicy({ pool, policy: { pattern: "127.0.0.1" } });
    for (let i = 0; i < 3; i++) expect((await getThrough(gw.address, `${base}/c${i}`)).status).toBe(200);
    expect(await keptUses(gw, "http")).toBe(2);
  });

  it("gives a kept lease back at once when another worker asks for its host (LeaseWanted)", async () => {
    const pool = await newPool(1);
    const gw = await startGateway(pool, { idleMs: 30_000, maxMs: 60_000 });
    const a = await getThrough(gw.address, `${base}/first`);
    expect(a.status).toBe(200);
    // kept idle: the only proxy is held by the gateway
    expect(await keptNow(gw)).toBe(1);
    expect(await live()).toBe(1);
    const other = worker(pool, "kept-rival");
    const started = Date.now();
    const lease = await other.acquire(`${base}/x`, { maxWaitMs: 3_000 });
    // granted long before the 30 s idle limit: the broker asked the gateway for it back
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(lease.proxy.id).toBe(a.headers[LEASE_HEADERS.proxy]);
    expect(await keptNow(gw)).toBe(0);
    await lease.release({ kind: "SUCCESS" });
  });

  it.each([
    { limit: "idle for idleMs", keep: { idleMs: 300, maxMs: 10_000 } },
    { limit: "first kept maxMs ago, even while its idle limit is far", keep: { idleMs: 10_000, maxMs: 300 } },
  ])("releases a lease kept $limit", async ({ keep }) => {
    const pool = await newPool(1);
    const gw = await startGateway(pool, keep);
    expect((await getThrough(gw.address, `${base}/limit`)).status).toBe(200);
    const kept = Date.now();
    expect(await keptNow(gw)).toBe(1);
    expect(await live()).toBe(1);
    // nobody asks for it (no acquire while it is kept): the sweep gives it back after 300 ms
    await expect.poll(live, { timeout: 2_000, interval: 20 }).toBe(0);
    expect(Date.now() - kept).toBeGreaterThanOrEqual(200);
    expect(await keptNow(gw)).toBe(0);
    const lease = await worker(pool, "limit-checker").acquire(`${base}/x`, { maxWaitMs: 0 });
    await lease.release({ kind: "SUCCESS" });
  });

  it("does not keep a lease whose request was rate limited (429): the next request gets a new lease", async () => {
    const pool = await newPool(2);
    const gw = await startGateway(pool, { idleMs: 2_000, maxMs: 10_000 });
    const first = await getThrough(gw.address, `${base}/ok`);
    expect(first.status).toBe(200);
    expect(await keptNow(gw)).toBe(1);
    // through the kept lease, answered 429: released at once (RATE_LIMITED), not kept
    const limited = await getThrough(gw.address, `${base}/429`);
    expect(limited.status).toBe(429);
    expect(limited.headers[LEASE_HEADERS.proxy]).toBe(first.headers[LEASE_HEADERS.proxy]);
    expect(await keptUses(gw, "http")).toBe(1);
    expect(await gatewayMetric(gw, "proxybroker_gateway_requests_total", '{kind="http",outcome="RATE_LIMITED"}')).toBe(1);
    expect(await keptNow(gw)).toBe(0);
    expect(await live()).toBe(0);
    const next = await getThrough(gw.address, `${base}/after`);
    expect(next.status).toBe(200);
    expect(await keptUses(gw, "http")).toBe(1);
  });

  it("never keeps the lease of a request with a session, given in the username or a header", async () => {
    const pool = await newPool(2);
    const gw = await startGateway(pool, { idleMs: 2_000, maxMs: 10_000 });
    const used: string[] = [];
    for (let i = 0; i < 3; i++) {
      const a = await getThrough(gw.address, `${base}/s${i}`, { auth: "session-abc:x" });
      expect(a.status).toBe(200);
      used.push(String(a.headers[LEASE_HEADERS.proxy]));
      expect(await keptNow(gw)).toBe(0);
    }
    const byHeader = await getThrough(gw.address, `${base}/h`, { headers: { "x-proxybroker-session": "abc" } });
    expect(byHeader.status).toBe(200);
    used.push(String(byHeader.headers[LEASE_HEADERS.proxy]));
    // sticky (one proxy for the session), yet each request leased and released
    expect(new Set(used).size).toBe(1);
    expect(await keptNow(gw)).toBe(0);
    expect(await keptUses(gw, "http")).toBe(0);
    expect(await live()).toBe(0);
    // the control: without a session, the second request goes through a kept lease
    for (let i = 0; i < 2; i++) expect((await getThrough(gw.address, `${base}/n${i}`)).status).toBe(200);
    expect(await keptUses(gw, "http")).toBe(1);
  });

  it("a request past maxMs gets a new lease rather than the kept one", async () => {
    const pool = await newPool(1);
    const gw = await startGateway(pool, { idleMs: 10_000, maxMs: 300 });
    expect((await getThrough(gw.address, `${base}/m0`)).status).toBe(200);
    expect((await getThrough(gw.address, `${base}/m1`)).status).toBe(200);
    expect(await keptUses(gw, "http")).toBe(1);
    // first kept more than 300 ms ago: not taken again, released, and the proxy leased anew
    await new Promise((r) => setTimeout(r, 350));
    expect((await getThrough(gw.address, `${base}/m2`)).status).toBe(200);
    expect(await keptUses(gw, "http")).toBe(1);
    expect(await keptNow(gw)).toBe(1);
    expect(await live()).toBe(1);
  });

  it("a lease asked back while its request is in flight is released when the request ends, not kept", async () => {
    const pool = await newPool(1);
    const gw = await startGateway(pool, { idleMs: 30_000, maxMs: 60_000 });
    expect((await getThrough(gw.address, `${base}/warm`)).status).toBe(200);
    expect(await keptNow(gw)).toBe(1);
    // the slow request takes the kept lease; meanwhile another worker asks for the host
    const slow = getThrough(gw.address, `${base}/slow`);
    await expect.poll(() => keptNow(gw), { timeout: 1_000, interval: 10 }).toBe(0);
    const started = Date.now();
    const lease = await worker(pool, "in-flight-rival").acquire(`${base}/x`, { maxWaitMs: 3_000 });
    expect(Date.now() - started).toBeLessThan(1_500);
    const a = await slow;
    expect(a.status).toBe(200);
    expect(a.body).toContain("slow page");
    expect(await keptUses(gw, "http")).toBe(1);
    expect(await keptNow(gw)).toBe(0);
    await lease.release({ kind: "SUCCESS" });
  });

  it("a RATE_LIMITED answer gives back every lease kept for its host", async () => {
    const pool = await newPool(2);
    const gw = await startGateway(pool, { idleMs: 5_000, maxMs: 10_000 });
    // two requests at once: two leases, both kept
    const both = await Promise.all([getThrough(gw.address, `${base}/slow`), getThrough(gw.address, `${base}/slow`)]);
    expect(both.map((a) => a.status)).toEqual([200, 200]);
    expect(await keptNow(gw)).toBe(2);
    expect(await live()).toBe(2);
    expect((await getThrough(gw.address, `${base}/429`)).status).toBe(429);
    expect(await keptUses(gw, "http")).toBe(1);
    expect(await keptNow(gw)).toBe(0);
    await expect.poll(live, { timeout: 1_000, interval: 20 }).toBe(0);
  });

  it("its own kept lease does not keep the gateway from the same host on another port (wait-0)", async () => {
    const pool = await newPool(1);
    const gw = await startGateway(pool, { idleMs: 30_000, maxMs: 60_000 });
    expect((await getThrough(gw.address, `${base}/port-a`)).status).toBe(200);
    expect(await keptNow(gw)).toBe(1);
    // another host:port (not the kept lease's key), the same domain-key: the only proxy is the
    // gateway's own idle lease, which it gives back rather than answer 503
    const other = await getThrough(gw.address, `${base2}/port-b`, { auth: "wait-0:x" });
    expect(other.status).toBe(200);
    expect(await keptUses(gw, "http")).toBe(0);
  });

  it("releases its kept leases when it stops", async () => {
    const pool = await newPool(1);
    const t = await startTestGateway({
      address: b.address,
      workerId: "kept-stopping",
      over: { pool, keep: { idleMs: 30_000, maxMs: 60_000 } },
    });
    gateways.push(t);
    expect((await getThrough(t.gw.address, `${base}/before-stop`)).status).toBe(200);
    expect(await keptNow(t.gw)).toBe(1);
    expect(await live()).toBe(1);
    // the gateway alone (its broker clients still open): it gave the lease back
    await t.gw.stop();
    expect(await live()).toBe(0);
    expect(await keptNow(t.gw)).toBe(0);
    const lease = await worker(pool, "stop-checker").acquire(`${base}/x`, { maxWaitMs: 0 });
    await lease.release({ kind: "SUCCESS" });
  });

  it("keeps the lease of an intercepted HTTPS request for the next one of its host", async () => {
    const pool = await newPool(1);
    const gw = await startGateway(pool, { idleMs: 2_000, maxMs: 10_000 }, { intercept: await interception() });
    const curl = ["-s", "--max-time", "10", "--cacert", certs.caFile, "-x", `http://${gw.address}`];
    // two requests in one tunnel: the second through the first one's kept lease
    const { stdout } = await run("curl", [...curl, `${tlsBase}/one`, `${tlsBase}/two`]);
    expect(stdout).toBe("secure pagesecure page");
    expect(await keptUses(gw, "intercepted")).toBe(1);
    expect(await keptNow(gw)).toBe(1);
    // another tunnel to the same host: the same kept lease
    expect((await run("curl", [...curl, `${tlsBase}/three`])).stdout).toBe("secure page");
    expect(await keptUses(gw, "intercepted")).toBe(2);
    expect(await keptUses(gw, "http")).toBe(0);
    expect(await gatewayMetric(gw, "proxybroker_gateway_requests_total", '{kind="intercepted",outcome="SUCCESS"}')).toBe(3);
  });

  it("never keeps the lease of a CONNECT tunnel (tunnel mode)", async () => {
    const pool = await newPool(1);
    const gw = await startGateway(pool, { idleMs: 2_000, maxMs: 10_000 });
    const curl = ["-s", "--max-time", "10", "--cacert", certs.caFile, "-x", `http://${gw.address}`];
    for (let i = 0; i < 2; i++) expect((await run("curl", [...curl, `${tlsBase}/t${i}`])).stdout).toBe("secure page");
    await expect.poll(() => gw.openTunnels, { timeout: 3_000 }).toBe(0);
    await expect.poll(live, { timeout: 2_000, interval: 20 }).toBe(0);
    expect(await keptNow(gw)).toBe(0);
    expect(await gatewayMetric(gw, "proxybroker_gateway_requests_total", '{kind="tunnel",outcome="SUCCESS"}')).toBe(2);
    // the control: a plain-HTTP request of the same gateway is kept
    expect((await getThrough(gw.address, `${base}/plain`)).status).toBe(200);
    expect(await keptNow(gw)).toBe(1);
  });
});

describe("kept leases' settings", () => {
  it("keeps leases 250 ms idle and 5000 ms at most by default; 0 turns keeping off", () => {
    expect(gatewaySettings({}, "gw")).toMatchObject({ keepIdleMs: 250, keepMaxMs: 5_000 });
    expect(gatewaySettings({ keepIdleMs: "0" }, "gw").keepIdleMs).toBe(0);
    expect(gatewaySettings({ keepIdleMs: "1000", keepMaxMs: "20000" }, "gw")).toMatchObject({ keepIdleMs: 1_000, keepMaxMs: 20_000 });
  });

  it("refuses a negative or malformed value, naming its variable", () => {
    for (const bad of ["-1", "soon", "1.5"]) {
      expect(() => gatewaySettings({ keepIdleMs: bad }, "gw")).toThrow(GatewaySettingsError);
      expect(() => gatewaySettings({ keepIdleMs: bad }, "gw")).toThrow(/GATEWAY_KEEP_IDLE_MS/);
      expect(() => gatewaySettings({ keepMaxMs: bad }, "gw")).toThrow(/GATEWAY_KEEP_MAX_MS/);
    }
    // a lease kept at most 0 ms would never be kept: refused
    expect(() => gatewaySettings({ keepMaxMs: "0" }, "gw")).toThrow(/GATEWAY_KEEP_MAX_MS/);
  });
});
