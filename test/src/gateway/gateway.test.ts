import { execFile } from "node:child_process";
import { createServer, request as httpRequest } from "node:http";
import { connect, createServer as createNetServer } from "node:net";
import type { AddressInfo, Socket } from "node:net";
import type { IncomingHttpHeaders, IncomingMessage, Server } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import type { Lease } from "@proxybroker/sdk";
import { LEASE_HEADERS } from "../../../src/gateway/gateway.js";
import type { Gateway, GatewayOptions } from "../../../src/gateway/gateway.js";
import { startTestGateway } from "../../support/gateway-under-test.js";
import type { TestGateway } from "../../support/gateway-under-test.js";
import { TargetPolicy } from "../../../src/gateway/targets.js";
import { TokenTable } from "../../../src/security/tokens.js";
import { withBroker } from "../../support/with-broker.js";
import { makeCerts } from "../../support/certs.js";
import type { TestCerts } from "../../support/certs.js";
import { HostCerts } from "../../../src/gateway/host-certs.js";
import { startForwardProxy } from "../../support/forward-proxy.js";
import { getThrough, metricValue } from "../../support/gateway-crawl.js";
import type { ForwardProxy } from "../../support/forward-proxy.js";

const run = promisify(execFile);

/**
 * The gateway against a broker (embedded store, real gRPC on loopback), real HTTP proxies on
 * loopback and real target servers; curl for CONNECT.
 */
describe("gateway", () => {
  const b = withBroker();
  let proxies: ForwardProxy[];
  let target: Server;
  let base: string;
  let tls: Server;
  let tlsBase: string;
  let certs: TestCerts;
  /** Requests the target is serving right now, and the most at once. */
  let inFlight = 0;
  let maxInFlight = 0;
  let seenHeaders: IncomingHttpHeaders[] = [];
  let lateHits = 0;
  let tlsConnections = 0;
  const clients: ProxyBrokerClient[] = [];
  const gateways: TestGateway[] = [];

  const startGateway = async (
    over: Partial<GatewayOptions> = {},
    client: Partial<ConstructorParameters<typeof ProxyBrokerClient>[0]> = {},
  ): Promise<Gateway> => {
    const t = await startTestGateway({ address: b.address, workerId: `gateway-test-${gateways.length}`, over, client });
    gateways.push(t);
    return t.gw;
  };

  /** Interception with the test CA; `trusted`: the sites' certificates (signed by it) verify. */
  const interception = async (trusted: boolean) => {
    const caPem = (await certs.read(certs.caFile)).toString();
    const caKey = (await certs.read(join(certs.dir, "ca.key"))).toString();
    return { certs: new HostCerts(caPem, caKey), upstreamCa: trusted ? [caPem] : undefined };
  };

  /** curl through the gateway, trusting the test CA (the intercepting gateway's certificates). */
  const curlTrusting = async (gw: Gateway, args: readonly string[]): Promise<string> =>
    (await run("curl", ["-s", "--cacert", certs.caFile, "-x", `http://${gw.address}`, ...args])).stdout;

  beforeAll(async () => {
    target = createServer((req, res) => {
      seenHeaders.push(req.headers);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const done = () => inFlight--;
      if (req.url === "/late") {
        // answers after 2 s, unless its client went first
        lateHits++;
        const t = setTimeout(() => res.writeHead(200).end("late"), 2_000);
        res.on("close", () => clearTimeout(t));
        done();
        return;
      }
      if (req.url === "/hang") {
        // answers long after the gateway's upstream timeout
        setTimeout(() => res.writeHead(200).end("late"), 1_500);
        done();
        return;
      }
      if (req.url === "/stream") {
        // a long download: a chunk every 100 ms for 1.2 s
        res.writeHead(200, { "content-type": "text/plain" });
        let n = 0;
        const t = setInterval(() => {
          res.write(`chunk ${++n}\n`);
          if (n < 12) return;
          clearInterval(t);
          done();
          res.end();
        }, 100);
        return;
      }
      if (req.url === "/slow") {
        setTimeout(() => {
          done();
          res.writeHead(200, { "content-type": "text/html" }).end("<p>slow page</p>");
        }, 150);
        return;
      }
      done();
      if (req.url === "/captcha") res.writeHead(200, { "content-type": "text/html" }).end("Please solve this CAPTCHA");
      else res.writeHead(200, { "content-type": "text/html" }).end("<div class='price'>9.99</div>");
    });
    await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
    const addr = target.address();
    base = `http://127.0.0.1:${typeof addr === "object" && addr !== null ? addr.port : 0}`;
    certs = await makeCerts();
    tls = createTlsServer({ key: await certs.read(certs.serverKeyFile), cert: await certs.read(certs.serverCertFile) }, (req, res) => {
      if (req.url === "/stream") {
        // a 4 s answer, a chunk every 100 ms (stopped when the reader goes)
        res.writeHead(200, { "content-type": "text/plain" });
        let n = 0;
        const t = setInterval(() => {
          if (++n < 40) {
            res.write(`chunk ${n}\n`);
            return;
          }
          clearInterval(t);
          res.end();
        }, 100);
        res.on("close", () => clearInterval(t));
        return;
      }
      if (req.url === "/captcha") res.writeHead(200, { "content-type": "text/html" }).end("Please solve this CAPTCHA");
      else res.writeHead(200, { "content-type": "text/html" }).end("secure page");
    });
    tls.on("secureConnection", () => tlsConnections++);
    // a WebSocket endpoint: the 101, then every byte echoed back
    tls.on("upgrade", (_req: IncomingMessage, socket: Duplex) => {
      socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
      socket.pipe(socket);
    });
    await new Promise<void>((r) => tls.listen(0, "127.0.0.1", r));
    const tlsAddr = tls.address();
    tlsBase = `https://127.0.0.1:${typeof tlsAddr === "object" && tlsAddr !== null ? tlsAddr.port : 0}`;
    proxies = [await startForwardProxy(), await startForwardProxy()];
    await b.admin.addProxies({ proxies: proxies.map((p) => ({ url: p.url })) });
  });
  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.stop()));
    await Promise.all(clients.splice(0).map((c) => c.close()));
    seenHeaders = [];
    maxInFlight = 0;
  });
  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    target.closeAllConnections();
    await new Promise<void>((r) => target.close(() => r()));
    await new Promise<void>((r) => tls.close(() => r()));
  });

  it("forwards a plain-HTTP request through a leased proxy, says which, and releases the lease", async () => {
    const gw = await startGateway();
    const before = proxies.map((p) => p.requests());
    const a = await getThrough(gw.address, `${base}/page`);
    expect(a.status).toBe(200);
    expect(a.body).toContain("9.99");
    expect(a.headers[LEASE_HEADERS.source]).toBe("broker");
    const used = proxies.findIndex((p, i) => p.requests() === (before[i] ?? 0) + 1);
    expect(a.headers[LEASE_HEADERS.proxy]).toBe(new URL(proxies[used]?.url ?? "").host);
    // released: both proxies are free again for that host
    const other = new ProxyBrokerClient({ address: b.address, workerId: "checker" });
    clients.push(other);
    const held: Lease[] = [await other.acquire(`${base}/x`), await other.acquire(`${base}/x`)];
    expect(new Set(held.map((l) => l.proxy.id)).size).toBe(2);
    for (const l of held) await l.release({ kind: "ABANDONED" });
    const counted = await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total");
    expect(counted).toContain('proxybroker_gateway_requests_total{kind="http",outcome="SUCCESS"} 1');
  });

  it("classifies by the response expectations of the site's domain policy (the crawler gives none)", async () => {
    // a pool of its own: the BLOCKED outcomes ban its proxies for the site, not the other tests'
    await b.admin.addProxies({ pool: "expects", proxies: proxies.map((p) => ({ url: p.url })) });
    await b.admin.setDomainPolicy({ pool: "expects", policy: { pattern: "127.0.0.1", expectations: { requiredMarkers: ["#product"] } } });
    const gw = await startGateway();
    const counted = async (outcome: string) =>
      new RegExp(`outcome="${outcome}"\\} (\\d+)`).exec(
        await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total"),
      )?.[1];
    // the page has a price but no #product: once the gateway's client holds the policy, BLOCKED
    await expect
      .poll(
        async () => {
          expect((await getThrough(gw.address, `${base}/page`, { auth: "pool-expects:x" })).status).toBe(200);
          return counted("BLOCKED");
        },
        { timeout: 5_000, interval: 100 },
      )
      .toBe("1");
    // the same page in the default pool, whose policies expect nothing: SUCCESS
    const before = Number((await counted("SUCCESS")) ?? 0);
    expect((await getThrough(gw.address, `${base}/page`)).status).toBe(200);
    expect(Number(await counted("SUCCESS"))).toBe(before + 1);
  });

  it("every request is a lease: concurrent requests for one site never exceed the proxies", async () => {
    const gw = await startGateway();
    const answers = await Promise.all(Array.from({ length: 6 }, () => getThrough(gw.address, `${base}/slow`)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(maxInFlight).toBe(proxies.length);
  });

  it("takes parameters from the username and from headers, and never forwards those headers", async () => {
    const gw = await startGateway();
    const first = await getThrough(gw.address, `${base}/a`, { auth: "session-cart42:" });
    const second = await getThrough(gw.address, `${base}/b`, { headers: { "x-proxybroker-session": "cart42" } });
    expect(first.status).toBe(200);
    expect(second.headers[LEASE_HEADERS.proxy]).toBe(first.headers[LEASE_HEADERS.proxy]);
    expect(seenHeaders.every((h) => Object.keys(h).every((k) => !k.startsWith("x-proxybroker")))).toBe(true);
  });

  it("answers 407 to a malformed username, 503 with Retry-After when no proxy frees up, 403 to a refused target", async () => {
    const gw = await startGateway({ targets: new TargetPolicy(["10.0.0.0/8"]) });
    const bad = await getThrough(gw.address, `${base}/a`, { auth: "sesion-x:" });
    expect(bad.status).toBe(407);
    expect(bad.body).toContain('unknown key "sesion"');
    // every proxy held for the site by another worker: a request that may not wait gets 503
    const other = new ProxyBrokerClient({ address: b.address, workerId: "hog" });
    clients.push(other);
    const held = [await other.acquire(`${base}/x`), await other.acquire(`${base}/x`)];
    const busy = await getThrough(gw.address, `${base}/a`, { auth: "wait-0:" });
    expect(busy.status).toBe(503);
    expect(Number(busy.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    for (const l of held) await l.release({ kind: "ABANDONED" });
    const refused = await getThrough(gw.address, "http://10.1.2.3/secret");
    expect(refused.status).toBe(403);
    expect(refused.body).toContain("GATEWAY_DENY_TARGETS");
    const counted = await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total");
    for (const status of [407, 503, 403]) expect(counted).toContain(`kind="http",outcome="refused_${status}"} 1`);
  });

  it("asks for credentials when it has client tokens, and takes a valid one", async () => {
    const token = "gateway-client-token-0123456789";
    const gw = await startGateway({ tokens: TokenTable.parse(`${token} worker crawler`) });
    expect((await getThrough(gw.address, `${base}/a`)).status).toBe(407);
    expect((await getThrough(gw.address, `${base}/a`, { auth: "user:wrong-token-0123456789" })).status).toBe(407);
    expect((await getThrough(gw.address, `${base}/a`, { auth: `session-s1:${token}` })).status).toBe(200);
  });

  it("with GATEWAY_CREDENTIALS=required, challenges a request without credentials (407, Basic), serves any password, an empty username as no parameters", async () => {
    const gw = await startGateway({ credentials: "required" });
    const challenged = await getThrough(gw.address, `${base}/a`);
    expect(challenged.status).toBe(407);
    expect(challenged.headers["proxy-authenticate"]).toMatch(/^Basic realm=/);
    expect((await getThrough(gw.address, `${base}/a`, { auth: "session-s1:anything" })).status).toBe(200);
    expect((await getThrough(gw.address, `${base}/a`, { auth: ":x" })).status).toBe(200);
    // CONNECT is challenged too (a browser's HTTPS)
    const { stdout } = await run("curl", [
      "-sk",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      "--max-time",
      "10",
      "-x",
      `http://${gw.address}`,
      `${tlsBase}/`,
    ]).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? "" }));
    expect(stdout).toBe("000"); // curl gives up on the tunnel: its CONNECT got a 407
    const counted = await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total");
    expect(counted).toContain('kind="http",outcome="refused_407"} 1');
    expect(counted).toContain('kind="tunnel",outcome="refused_407"} 1');
  });

  it("a client gone before or during its answer: ABANDONED, its lease released at once, nothing retried, no proxy's score changed", {
    timeout: 20_000,
  }, async () => {
    const gw = await startGateway();
    const scores = async () => (await b.admin.listProxies({ pool: "default" })).proxies.map((p) => p.score);
    const live = async () =>
      metricValue(await b.server.metrics.registry.getSingleMetricAsString("proxybroker_live_leases"), "proxybroker_live_leases");
    const before = await scores();
    // gone before the answer starts (curl --max-time 0.5 to a page that takes 2 s)
    lateHits = 0;
    const started = Date.now();
    await run("curl", ["-s", "--max-time", "0.5", "-x", `http://${gw.address}`, `${base}/late`]).catch(() => undefined);
    await expect.poll(live, { timeout: 1_000, interval: 20 }).toBe(0);
    expect(Date.now() - started).toBeLessThan(1_500);
    await new Promise((r) => setTimeout(r, 2_500));
    expect(lateHits).toBe(1); // not retried through another proxy
    // gone in the middle of a streamed answer
    await new Promise<void>((resolve, reject) => {
      const [host, port] = gw.address.split(":");
      const req = httpRequest({ host, port: Number(port), path: `${base}/stream`, headers: { host: new URL(base).host } }, (res) => {
        res.once("data", () => {
          req.destroy();
          resolve();
        });
      });
      req.on("error", () => resolve());
      req.on("timeout", () => reject(new Error("no answer")));
      req.end();
    });
    await expect.poll(live, { timeout: 1_000, interval: 20 }).toBe(0);
    const counted = await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total");
    expect(counted).toContain('kind="http",outcome="ABANDONED"} 2');
    expect(counted).not.toContain("PROXY_ERROR");
    expect(counted).not.toContain("SUCCESS");
    expect(await scores()).toEqual(before);
  });

  it("a site that fails through two proxies is the site's failure: no score changes, and it is not tried again for a while (502)", {
    timeout: 20_000,
  }, async () => {
    // two proxies that hang up when the site cannot be reached, in a pool of their own
    const hangUps = [await startForwardProxy({ hangUpOnTargetError: true }), await startForwardProxy({ hangUpOnTargetError: true })];
    try {
      await b.admin.addProxies({ pool: "hangups", proxies: hangUps.map((p) => ({ url: p.url })) });
      const gw = await startGateway();
      const scores = async () => (await b.admin.listProxies({ pool: "hangups" })).proxies.map((p) => p.score);
      const before = await scores();
      // a site that resets every connection
      const resetting = createNetServer((s) => s.destroy());
      await new Promise<void>((r) => resetting.listen(0, "127.0.0.1", r));
      const url = `http://127.0.0.1:${(resetting.address() as AddressInfo).port}/x`;
      try {
        const first = await getThrough(gw.address, url, { auth: "pool-hangups:x" });
        expect(first.status).toBeGreaterThanOrEqual(500); // proxy-chain's own status for a proxy that hung up (595)
        expect(hangUps.map((p) => p.requests())).toEqual([1, 1]); // tried through both
        const again = await getThrough(gw.address, url, { auth: "pool-hangups:x" });
        expect(again.status).toBe(502);
        expect(again.body).toMatch(/failed through two proxies/);
        expect(hangUps.map((p) => p.requests())).toEqual([1, 1]); // not tried again
        expect(await scores()).toEqual(before);
        const counted = await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total");
        expect(counted).toContain('kind="http",outcome="TARGET_ERROR"} 2');
        expect(counted).toContain('kind="http",outcome="refused_502"} 1');
      } finally {
        resetting.close();
      }
    } finally {
      await Promise.all(hangUps.map((p) => p.close()));
    }
  });

  it("pipelined requests are answered in their order: a slow page, then a refusal (407), both come back", { timeout: 20_000 }, async () => {
    const gw = await startGateway();
    const [host, port] = gw.address.split(":");
    const bad = Buffer.from("no-such-key-1:x").toString("base64");
    const target = new URL(base).host;
    const got = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: host ?? "", port: Number(port) }, () =>
        socket.write(
          `GET ${base}/slow HTTP/1.1\r\nHost: ${target}\r\n\r\n` +
            `GET ${base}/a HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: Basic ${bad}\r\n\r\n`,
        ),
      );
      let text = "";
      socket.setTimeout(10_000, () => socket.destroy(new Error(`timed out with ${JSON.stringify(text)}`)));
      socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
      socket.on("close", () => resolve(text));
      socket.on("error", reject);
    });
    const statuses = [...got.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
    expect(statuses, got).toEqual(["200", "407"]);
    expect(got).toContain("slow page");
  });

  it("a CONNECT to a site the proxy cannot reach is the site's failure: TARGET_ERROR, no proxy's score changed", {
    timeout: 20_000,
  }, async () => {
    const gw = await startGateway();
    const scores = async () => (await b.admin.listProxies({ pool: "default" })).proxies.map((p) => p.score);
    const before = await scores();
    // a closed port: the upstream proxy answers 502 to the CONNECT (three times: what quarantined a healthy proxy)
    const closed = await new Promise<number>((resolve) => {
      const s = createNetServer();
      s.listen(0, "127.0.0.1", () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    for (let i = 0; i < 3; i++) {
      await run("curl", ["-sk", "--max-time", "5", "-x", `http://${gw.address}`, `https://127.0.0.1:${closed}/`]).catch(() => undefined);
    }
    await expect.poll(() => gw.openTunnels, { timeout: 3_000 }).toBe(0);
    const counted = await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total");
    expect(counted).toContain('kind="tunnel",outcome="TARGET_ERROR"} 3');
    expect(await scores()).toEqual(before);
  });

  it("holds one lease per CONNECT tunnel while it is open, and releases it when it closes", async () => {
    // no policy names the host: released at once only when told so (tunnel-pacing.test.ts)
    const gw = await startGateway({ tunnels: { idleMs: 60_000, maxLifeMs: 600_000, unknownIntervalMs: 0 } });
    const { stdout } = await run("curl", ["-sk", "--max-time", "10", "-x", `http://${gw.address}`, `${tlsBase}/`]);
    expect(stdout).toBe("secure page");
    await expect.poll(() => gw.openTunnels, { timeout: 3_000 }).toBe(0);
    expect(await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total")).toContain(
      'kind="tunnel",outcome="SUCCESS"} 1',
    );
    // released: both proxies free again for that host
    const other = new ProxyBrokerClient({ address: b.address, workerId: "tunnel-checker" });
    clients.push(other);
    const held = [await other.acquire(tlsBase), await other.acquire(tlsBase)];
    expect(new Set(held.map((l) => l.proxy.id)).size).toBe(2);
    for (const l of held) await l.release({ kind: "ABANDONED" });
  });

  it("retries a GET once through another proxy when the first proxy fails", async () => {
    const dead = await startForwardProxy();
    const deadUrl = dead.url;
    await dead.close();
    await b.admin.addProxies({ proxies: [{ url: deadUrl }] });
    try {
      const gw = await startGateway();
      // the dead proxy is chosen for some of these; each still gets the page through a live one
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await getThrough(gw.address, `http://localhost:${new URL(base).port}/r${i}`));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(answers.every((a) => a.headers[LEASE_HEADERS.proxy] !== new URL(deadUrl).host)).toBe(true);
    } finally {
      await b.admin.removeProxies({ ids: [new URL(deadUrl).host] });
    }
  });

  it("intercepts HTTPS with the operator's CA: a lease per request inside one tunnel, each classified", async () => {
    const gw = await startGateway({ intercept: await interception(true) });
    const site = `https://localhost:${new URL(tlsBase).port}`;
    const before = proxies.reduce((n, p) => n + p.requests(), 0);
    // two requests over one kept-alive tunnel; curl checks the gateway's certificate against the CA
    const stdout = await curlTrusting(gw, ["-D", "-", `${site}/one`, `${site}/captcha`]);
    expect(stdout).toContain("secure page");
    const used = [...stdout.matchAll(/x-proxybroker-proxy: (\S+)/g)].map((m) => m[1]);
    expect(used).toHaveLength(2);
    // each request went through its leased proxy: one CONNECT there per proxy used (the next
    // lease of the same pair keeps that upstream tunnel and its TLS session)
    expect(proxies.reduce((n, p) => n + p.requests(), 0)).toBe(before + new Set(used).size);
    // the captcha page was read as BLOCKED: that proxy is banned for the site, the other is free
    const other = new ProxyBrokerClient({ address: b.address, workerId: "intercept-checker" });
    clients.push(other);
    const free = await other.acquire(site);
    await expect(other.acquire(site)).rejects.toThrow(/no/i);
    await free.release({ kind: "ABANDONED" });
  });

  it("intercepting, the next lease of a (proxy, site) pair reuses its tunnel and TLS session to the site", async () => {
    const gw = await startGateway({ intercept: await interception(true) });
    const site = `https://localhost:${new URL(tlsBase).port}`;
    const connectsBefore = proxies.map((p) => p.requests());
    const tlsBefore = tlsConnections;
    // one sticky session: every request's lease is the same pair, each a client connection of its own
    for (let i = 0; i < 3; i++)
      expect(await curlTrusting(gw, ["-x", `http://session-reuse1:x@${gw.address}`, `${site}/r${i}`])).toContain("secure page");
    // one CONNECT through the proxy, one TLS handshake with the site, for the three leases
    const connects = proxies.map((p, i) => p.requests() - (connectsBefore[i] ?? 0));
    expect(connects.sort()).toEqual([0, 1]);
    expect(tlsConnections - tlsBefore).toBe(1);
  });

  it("intercepting, a WebSocket upgrade reaches the site and holds one lease for the socket's life", { timeout: 20_000 }, async () => {
    const gw = await startGateway({ intercept: await interception(true) });
    const port = new URL(tlsBase).port;
    const [gwHost, gwPort] = gw.address.split(":");
    const live = async () =>
      metricValue(await b.server.metrics.registry.getSingleMetricAsString("proxybroker_live_leases"), "proxybroker_live_leases");
    // CONNECT through the gateway, TLS with its host certificate, then the upgrade inside
    const raw = connect({ host: gwHost ?? "", port: Number(gwPort) });
    await new Promise<void>((resolve) => raw.once("connect", () => resolve()));
    raw.write(`CONNECT localhost:${port} HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`);
    await new Promise<void>((resolve) => raw.once("data", () => resolve()));
    const secure = tlsConnect({ socket: raw, servername: "localhost", ca: await certs.read(certs.caFile) });
    await new Promise<void>((resolve, reject) => {
      secure.once("secureConnect", () => resolve());
      secure.once("error", reject);
    });
    let got = "";
    secure.on("data", (d: Buffer) => (got += d.toString()));
    secure.write(
      `GET /socket HTTP/1.1\r\nHost: localhost:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    );
    await expect.poll(() => got, { timeout: 5_000 }).toMatch(/^HTTP\/1\.1 101 /);
    secure.write("frame-1");
    await expect.poll(() => got, { timeout: 5_000 }).toContain("frame-1");
    // the socket holds its lease while it is open ...
    expect(await live()).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    secure.write("frame-2");
    await expect.poll(() => got, { timeout: 5_000 }).toContain("frame-2");
    // ... and releases it when it closes
    secure.destroy();
    await expect.poll(live, { timeout: 3_000 }).toBe(0);
    expect(await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total")).toContain(
      'kind="intercepted",outcome="SUCCESS"} 1',
    );
  });

  it("releases an intercepted request's lease as soon as its client goes away, not when the site ends", async () => {
    await b.admin.addProxies({ pool: "cancel", proxies: proxies.map((p) => ({ url: p.url })) });
    const gw = await startGateway({ intercept: await interception(true) });
    const site = `https://localhost:${new URL(tlsBase).port}`;
    // curl gives up after 300 ms of a 4 s answer
    const curl = ["-s", "--cacert", certs.caFile, "-x", `http://pool-cancel:x@${gw.address}`, "--max-time", "0.3", `${site}/stream`];
    await run("curl", curl).catch(() => undefined);
    const checker = new ProxyBrokerClient({ address: b.address, pool: "cancel", workerId: "cancel-checker" });
    clients.push(checker);
    const bothFree = async (): Promise<boolean> => {
      const held: Lease[] = [];
      try {
        for (let i = 0; i < 2; i++) held.push(await checker.acquire(site, { maxWaitMs: 0 }));
        return true;
      } catch {
        return false;
      } finally {
        for (const l of held) await l.release({ kind: "ABANDONED" });
      }
    };
    await expect.poll(bothFree, { timeout: 2_000, interval: 100 }).toBe(true);
    expect(await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total")).toContain(
      'kind="intercepted",outcome="ABANDONED"} 1',
    );
  });

  it("answers 504 to an intercepted request whose proxy never answers, and releases it as a PROXY_ERROR", async () => {
    const sockets = new Set<Socket>();
    const hanging = createNetServer((s) => {
      sockets.add(s);
      s.on("error", () => undefined);
    });
    await new Promise<void>((r) => hanging.listen(0, "127.0.0.1", r));
    const port = (hanging.address() as AddressInfo).port;
    try {
      await b.admin.addProxies({ pool: "hang", proxies: [{ url: `http://127.0.0.1:${port}` }] });
      const gw = await startGateway({ intercept: await interception(true), upstreamTimeoutMs: 500 });
      const started = Date.now();
      const curl = ["-s", "--cacert", certs.caFile, "-x", `http://pool-hang:x@${gw.address}`, "-o", "/dev/null", "-w", "%{http_code}"];
      const { stdout } = await run("curl", [...curl, "--max-time", "10", `https://localhost:${new URL(tlsBase).port}/x`]);
      expect(stdout).toBe("504");
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total")).toContain(
        'kind="intercepted",outcome="PROXY_ERROR"} 1',
      );
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => hanging.close(() => r()));
    }
  });

  it("verifies the site's certificate when it intercepts: one signed by an unknown CA is a 502", async () => {
    const gw = await startGateway({ intercept: await interception(false) });
    const stdout = await curlTrusting(gw, ["-o", "/dev/null", "-w", "%{http_code}", `${tlsBase}/x`]);
    expect(stdout).toBe("502");
  });

  it("answers 504 when the site does not answer in time, and releases the lease as a PROXY_ERROR", async () => {
    const gw = await startGateway({ upstreamTimeoutMs: 300 });
    const site = `http://localhost:${new URL(base).port}`;
    const a = await getThrough(gw.address, `${site}/hang`);
    expect(a.status).toBe(504);
    expect(a.body).toContain("no answer within 300 ms");
    await expect
      .poll(() => gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total"))
      .toContain('kind="http",outcome="PROXY_ERROR"} 1');
  });

  it("serves Python requests like any HTTP client: a session in the proxy URL keeps its proxy", async () => {
    const gw = await startGateway();
    // requests sends no Proxy-Authorization when the password is empty: any password will do
    const script = [
      "import requests, sys",
      `proxies = {"http": "http://session-py1:unused@${gw.address}"}`,
      "a = requests.get(sys.argv[1], proxies=proxies)",
      "b = requests.get(sys.argv[1], proxies=proxies)",
      'print(a.status_code, b.status_code, a.headers["x-proxybroker-proxy"] == b.headers["x-proxybroker-proxy"])',
    ].join("\n");
    const { stdout } = await run("/usr/bin/python3", ["-c", script, `${base}/py`]);
    expect(stdout.trim()).toBe("200 200 True");
  });

  it("keeps a lease with heartbeats while a long answer streams: nobody else gets its proxy meanwhile", async () => {
    // a short TTL: the 1.2 s download outlives it several times, heartbeats (every ttl/3) keep it
    const gw = await startGateway({}, { ttlMs: 300 });
    const site = base;
    const other = new ProxyBrokerClient({ address: b.address, workerId: "streaming-rival" });
    clients.push(other);
    // the rival holds one proxy for the site; the download gets the other
    const held = await other.acquire(`${site}/x`);
    const download = getThrough(gw.address, `${site}/stream`);
    await new Promise((r) => setTimeout(r, 800));
    // 0.8 s in (past the 300 ms TTL): the download's proxy is still leased
    await expect(other.acquire(`${site}/x`, { maxWaitMs: 0 })).rejects.toThrow(/no/i);
    const a = await download;
    expect(a.status).toBe(200);
    expect(a.body).toContain("chunk 12");
    expect(a.headers[LEASE_HEADERS.proxy]).not.toBe(held.proxy.id);
    await held.release({ kind: "ABANDONED" });
  });

  it("closes an idle CONNECT tunnel and releases its lease", async () => {
    const gw = await startGateway({ tunnels: { idleMs: 300, maxLifeMs: 60_000 } });
    const [host, port] = gw.address.split(":");
    const socket = connect(Number(port), host);
    const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now())));
    socket.on("error", () => undefined);
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    const authority = new URL(tlsBase).host;
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    const head = await new Promise<string>((resolve) => socket.once("data", (d: Buffer) => resolve(d.toString())));
    expect(head).toContain("200");
    const openedAt = Date.now();
    expect(gw.openTunnels).toBe(1);
    // nothing sent: closed once idle for 300 ms (checked every 250 ms)
    expect((await closed) - openedAt).toBeLessThan(2_000);
    await expect.poll(() => gw.openTunnels, { timeout: 2_000 }).toBe(0);
    expect(await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total")).toContain('kind="tunnel"');
  });
});
