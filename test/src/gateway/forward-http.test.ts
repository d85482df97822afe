/**
 * The gateway's own plain-HTTP forward (forward-http.ts): what the leased proxy receives (the
 * request line and Host checked, the proxy's own credentials, no hop-by-hop or parameter headers,
 * never the client's gateway credentials) and what the client gets back, against an upstream HTTP
 * proxy that records each request it is sent.
 */
import { Agent, createServer } from "node:http";
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from "node:http";
import { Agent as HttpsAgent, createServer as createHttpsServer } from "node:https";
import { connect, createServer as createNetServer } from "node:net";
import type { AddressInfo, Server as NetServer } from "node:net";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { proxyCredentials } from "../../../src/gateway/credentials.js";
import { answeredHeaders, forwardedHeaders, forwardHttp, upstreamOf } from "../../../src/gateway/forward-http.js";
import { httpTarget } from "../../../src/gateway/targets.js";
import { makeCerts } from "../../support/certs.js";
import { startSocks5Server } from "../../support/socks5-server.js";
import type { Socks5Server } from "../../support/socks5-server.js";
import { metricValue } from "../../support/gateway-crawl.js";
import { withBroker } from "../../support/with-broker.js";
import { startTestGateway } from "../../support/gateway-under-test.js";
import type { TestGateway } from "../../support/gateway-under-test.js";

describe("forwarded headers", () => {
  it("drop hop-by-hop headers and the client's Host, set the target's, add the proxy's credentials", () => {
    const raw = [
      "Host",
      "evil.example",
      "Connection",
      "keep-alive",
      "Proxy-Connection",
      "keep-alive",
      "Proxy-Authorization",
      "Basic Z3c6dA==",
      "TE",
      "trailers",
      "Accept",
      "*/*",
      "X-Mine",
      "1",
    ];
    expect(forwardedHeaders(raw, "site.example:8080", "Basic dTpw")).toEqual([
      "Host",
      "site.example:8080",
      "Accept",
      "*/*",
      "X-Mine",
      "1",
      "Proxy-Authorization",
      "Basic dTpw",
    ]);
    expect(forwardedHeaders(["HOST", "a", "host", "b"], "t", undefined)).toEqual(["Host", "t"]);
  });

  it("drop an answer's hop-by-hop and malformed headers, keep the rest as sent", () => {
    const raw = [
      "Transfer-Encoding",
      "chunked",
      "Connection",
      "close",
      "Set-Cookie",
      "a=1",
      "Set-Cookie",
      "b=2",
      "Bad Name",
      "x",
      "X-Ctl",
      "a\u0000b",
    ];
    expect(answeredHeaders(raw)).toEqual(["Set-Cookie", "a=1", "Set-Cookie", "b=2"]);
  });

  it("read a proxy URL once: http or https (host, port, Basic credentials decoded from the URL) or socks5 (an agent)", () => {
    expect(upstreamOf("http://us%40er:p%3Ass@10.0.0.1:3128")).toEqual({
      kind: "http",
      host: "10.0.0.1",
      port: 3128,
      authorization: `Basic ${Buffer.from("us@er:p:ss").toString("base64")}`,
    });
    expect(upstreamOf("http://[::1]/")).toEqual({ kind: "http", host: "::1", port: 80, authorization: undefined });
    expect(upstreamOf("https://10.0.0.2")).toEqual({ kind: "https", host: "10.0.0.2", port: 443, authorization: undefined });
    expect(upstreamOf("socks5://u:p@10.0.0.1:1080").kind).toBe("socks");
    expect(upstreamOf("http://10.0.0.3:1")).toBe(upstreamOf("http://10.0.0.3:1"));
    expect(() => upstreamOf("ftp://10.0.0.1:21")).toThrow(/http, https or socks5/);
  });

  it("read the client's Proxy-Authorization: Basic only, no colon means all username", () => {
    const basic = (s: string): string => `Basic ${Buffer.from(s).toString("base64")}`;
    expect(proxyCredentials(undefined)).toEqual({ username: "", password: "" });
    expect(proxyCredentials(basic("session-a:tok:en"))).toEqual({ username: "session-a", password: "tok:en" });
    expect(proxyCredentials(`  bAsIc ${Buffer.from("u").toString("base64")} `)).toEqual({ username: "u", password: "" });
    expect(() => proxyCredentials("Bearer abc")).toThrow(/Basic/);
    expect(() => proxyCredentials("Basic")).toThrow(/Basic/);
  });
});

type Recorded = Array<{ line: string; headers: IncomingHttpHeaders; rawHeaders: string[]; body: string }>;

/** An upstream HTTP proxy (or, with TLS, an https one) that records what it is sent and answers itself (407 for paths with /deny). */
async function recordingProxy(tls?: { cert: Buffer; key: Buffer }): Promise<{ server: Server; port: number; got: Recorded }> {
  const got: Recorded = [];
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      got.push({ line: `${req.method} ${req.url}`, headers: req.headers, rawHeaders: req.rawHeaders, body });
      if ((req.url ?? "").includes("/deny")) {
        res.writeHead(407, { "proxy-authenticate": 'Basic realm="up"' }).end();
        return;
      }
      res.writeHead(200, { "content-type": "text/plain", "keep-alive": "timeout=5", "x-site": "yes" }).end("from the site");
    });
  };
  const server: Server = tls === undefined ? createServer(handle) : createHttpsServer(tls, handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port, got };
}

/** Send `head` as it is and read the whole answer (the connection closes after it). */
function raw(address: string, head: string): Promise<string> {
  const [host, port] = address.split(":");
  return new Promise((resolve, reject) => {
    const socket = connect({ host: host ?? "", port: Number(port) }, () => socket.write(head));
    let got = "";
    socket.setTimeout(10_000, () => socket.destroy(new Error("no answer")));
    socket.on("data", (d: Buffer) => {
      got += d.toString("latin1");
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(got));
  });
}

describe("what the leased proxy receives", () => {
  const b = withBroker();
  let upstream: Awaited<ReturnType<typeof recordingProxy>>;
  let t: TestGateway;

  beforeAll(async () => {
    upstream = await recordingProxy();
    await b.admin.addProxies({ proxies: [{ url: `http://pu:pp@127.0.0.1:${upstream.port}` }] });
    t = await startTestGateway({ address: b.address, workerId: "forward-http" });
  });
  afterAll(async () => {
    await t?.stop();
    upstream?.server.close();
  });

  it("the request line and Host checked, the proxy's credentials, none of the client's proxy headers", async () => {
    const mine = `Basic ${Buffer.from("session-f1:anything").toString("base64")}`;
    const answer = await raw(
      t.gw.address,
      "GET http://user:pw@site.test:8080/p?q=1#frag HTTP/1.1\r\n" +
        "Host: 127.0.0.1:9\r\n" +
        `Proxy-Authorization: ${mine}\r\n` +
        "Proxy-Connection: keep-alive\r\n" +
        "X-ProxyBroker-Max-Wait: 2\r\n" +
        "Accept: text/html\r\n" +
        "Connection: close\r\n\r\n",
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain("from the site");
    expect(answer.toLowerCase()).toContain("x-site: yes");
    // the site's hop-by-hop header is not passed back
    expect(answer.toLowerCase()).not.toContain("keep-alive: timeout=5");
    const sent = upstream.got.at(-1);
    expect(sent?.line).toBe("GET http://site.test:8080/p?q=1");
    expect(sent?.headers.host).toBe("site.test:8080");
    // the proxy's credentials, and only them: Node would keep the first of two such headers
    const authorizations = (sent?.rawHeaders ?? []).filter(
      (_, i, all) => i % 2 === 1 && all[i - 1]?.toLowerCase() === "proxy-authorization",
    );
    expect(authorizations).toEqual([`Basic ${Buffer.from("pu:pp").toString("base64")}`]);
    expect(sent?.headers["proxy-connection"]).toBeUndefined();
    expect(sent?.headers["x-proxybroker-max-wait"]).toBeUndefined();
    expect(sent?.headers.accept).toBe("text/html");
  });

  it("an upstream proxy that refuses its credentials (407): a 597 to the client, never the proxy's challenge, and the lease is a PROXY_ERROR", async () => {
    const answer = await raw(t.gw.address, "GET http://site.test/deny HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 597 /);
    expect(answer.toLowerCase()).not.toContain("proxy-authenticate");
    const counted = await t.gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total");
    expect(metricValue(counted, "proxybroker_gateway_requests_total", '{kind="http",outcome="PROXY_ERROR"}')).toBe(1);
  });

  it("a chunked body on a GET goes on chunked: its bytes never reach the proxy as a request of their own", async () => {
    const before = upstream.got.length;
    const hidden = "GET http://127.0.0.1:22/ HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n";
    const answer = await raw(
      t.gw.address,
      "GET http://site.test/c HTTP/1.1\r\nHost: site.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
        `${hidden.length.toString(16)}\r\n${hidden}\r\n0\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    await new Promise((r) => setTimeout(r, 100));
    expect(upstream.got.slice(before).map((g) => g.line)).toEqual(["GET http://site.test/c"]);
    expect(upstream.got.at(-1)?.body).toBe(hidden);
  });

  it("a Proxy-Authorization that is not Basic: a 400 naming the form, nothing sent upstream", async () => {
    const before = upstream.got.length;
    const answer = await raw(
      t.gw.address,
      "GET http://site.test/x HTTP/1.1\r\nHost: site.test\r\nProxy-Authorization: Bearer abc\r\nConnection: close\r\n\r\n",
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain("Basic");
    expect(upstream.got.length).toBe(before);
  });
});

describe("other kinds of upstream proxy", () => {
  const b = withBroker();
  let socks: Socks5Server;
  let site: { server: Server; port: number; got: Recorded };
  let t: TestGateway;

  beforeAll(async () => {
    socks = await startSocks5Server({ user: "su", pass: "sp" });
    // the site itself, reached through the socks5 proxy: it records what it is sent too
    site = await recordingProxy();
    await b.admin.addProxies({ pool: "socks", proxies: [{ url: `socks5://su:sp@${socks.address}` }] });
    t = await startTestGateway({ address: b.address, workerId: "forward-socks" });
  });
  afterAll(async () => {
    await t?.stop();
    await socks?.close();
    site?.server.close();
  });

  it("socks5: the proxy is asked for the site checked, the site gets the request in origin form with its Host", async () => {
    const auth = Buffer.from("pool-socks:x").toString("base64");
    const answer = await raw(
      t.gw.address,
      `GET http://127.0.0.1:${site.port}/s?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nProxy-Authorization: Basic ${auth}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain("from the site");
    expect(socks.connects).toEqual([`127.0.0.1:${site.port}`]);
    expect(site.got.at(-1)?.line).toBe("GET /s?x=1");
    expect(site.got.at(-1)?.headers.host).toBe(`127.0.0.1:${site.port}`);
    expect(site.got.at(-1)?.headers["proxy-authorization"]).toBeUndefined();
  });

  it("socks5: a site's own 407 is its answer, passed on (never taken for the proxy refusing us)", async () => {
    const auth = Buffer.from("pool-socks:x").toString("base64");
    const answer = await raw(
      t.gw.address,
      `GET http://127.0.0.1:${site.port}/deny HTTP/1.1\r\nHost: x\r\nProxy-Authorization: Basic ${auth}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 407 /);
    expect(answer.toLowerCase()).not.toContain("proxy-authenticate");
    expect(site.got.at(-1)?.line).toBe("GET /deny");
  });

  it("https: the request goes to the proxy over TLS (the proxy's certificate verified), in absolute form with its credentials", async () => {
    const certs = await makeCerts();
    const proxy = await recordingProxy({ cert: await certs.read(certs.serverCertFile), key: await certs.read(certs.serverKeyFile) });
    const agents = { http: new Agent(), https: new HttpsAgent({ ca: await certs.read(certs.caFile) }) };
    // the gateway's side, cut down: the client's request forwarded through the https proxy
    const front = createServer((req, res) => {
      void forwardHttp({
        req,
        res,
        target: httpTarget(req.url ?? ""),
        upstream: upstreamOf(`https://hu:hp@127.0.0.1:${proxy.port}`),
        agents,
      });
    });
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    try {
      const address = `127.0.0.1:${(front.address() as AddressInfo).port}`;
      const answer = await raw(address, "GET http://site.test/t HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n");
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(proxy.got.at(-1)?.line).toBe("GET http://site.test/t");
      expect(proxy.got.at(-1)?.headers["proxy-authorization"]).toBe(`Basic ${Buffer.from("hu:hp").toString("base64")}`);
      // a proxy whose certificate does not verify: the gateway's own 599, nothing from the site
      const untrusted = { ...agents, https: new HttpsAgent() };
      const strict = createServer((req, res) => {
        void forwardHttp({
          req,
          res,
          target: httpTarget(req.url ?? ""),
          upstream: upstreamOf(`https://127.0.0.1:${proxy.port}`),
          agents: untrusted,
        });
      });
      await new Promise<void>((resolve) => strict.listen(0, "127.0.0.1", resolve));
      const refused = await raw(
        `127.0.0.1:${(strict.address() as AddressInfo).port}`,
        "GET http://site.test/u HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n",
      );
      strict.close();
      expect(refused).toMatch(/^HTTP\/1\.1 599 /);
      expect(proxy.got.at(-1)?.line).toBe("GET http://site.test/t");
    } finally {
      front.close();
      proxy.server.close();
    }
  });
});

/**
 * An upstream proxy that answers raw bytes by path: a status text Node would refuse to write
 * (/badreason), an answer 600 ms late (/late), a body whose second half comes 1 s after its head
 * (/long), anything else at once.
 */
async function rawProxy(): Promise<{ server: NetServer; port: number; lines: string[] }> {
  const lines: string[] = [];
  const server = createNetServer((socket) => {
    socket.on("error", () => undefined);
    let head = "";
    socket.on("data", (d: Buffer) => {
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      const line = head.split("\r\n")[0] ?? "";
      lines.push(line);
      head = "";
      if (line.includes("/badreason")) socket.end("HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\n\r\nok");
      else if (line.includes("/late")) setTimeout(() => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate"), 600);
      else if (line.includes("/long")) {
        socket.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345");
        setTimeout(() => socket.end("67890"), 1_000);
      } else socket.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port, lines };
}

describe("answers the gateway must survive, clients that leave", () => {
  const b = withBroker();
  let proxy: Awaited<ReturnType<typeof rawProxy>>;
  let t: TestGateway;
  const basic = (user: string): string => `Basic ${Buffer.from(`${user}:x`).toString("base64")}`;

  beforeAll(async () => {
    proxy = await rawProxy();
    await b.admin.addProxies({ pool: "raw", proxies: [{ url: `http://127.0.0.1:${proxy.port}` }] });
    t = await startTestGateway({ address: b.address, workerId: "forward-raw", over: { upstreamTimeoutMs: 300 } });
  });
  afterAll(async () => {
    await t?.stop();
    proxy?.server.close();
  });

  it("a status text Node would refuse: the answer goes on without it, the gateway serves on", async () => {
    const answer = await raw(
      t.gw.address,
      `GET http://site.test/badreason HTTP/1.1\r\nHost: site.test\r\nProxy-Authorization: ${basic("pool-raw")}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).not.toContain("\x01");
    expect(answer.endsWith("ok")).toBe(true);
    const next = await raw(
      t.gw.address,
      `GET http://site.test/fine HTTP/1.1\r\nHost: site.test\r\nProxy-Authorization: ${basic("pool-raw")}\r\nConnection: close\r\n\r\n`,
    );
    expect(next).toMatch(/^HTTP\/1\.1 200 /);
  });

  it("pipelined: an answer that comes after the gateway's own 504 was written is dropped, never written over it", async () => {
    const auth = `Proxy-Authorization: ${basic("pool-raw")}\r\n`;
    // two sites: the second request is not paced behind the first's lease
    const answer = await raw(
      t.gw.address,
      `GET http://long.test/long HTTP/1.1\r\nHost: long.test\r\n${auth}\r\n` +
        `GET http://late.test/late HTTP/1.1\r\nHost: late.test\r\n${auth}Connection: close\r\n\r\n`,
    );
    const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
    expect(statuses).toEqual(["200", "504"]);
    expect(answer).toContain("1234567890");
    expect(answer).not.toContain("late");
    // still serving
    const next = await raw(t.gw.address, `GET http://site.test/after HTTP/1.1\r\nHost: site.test\r\n${auth}Connection: close\r\n\r\n`);
    expect(next).toMatch(/^HTTP\/1\.1 200 /);
  });

  it("a retry through another proxy keeps the request's parameter headers (its pool)", async () => {
    // the working proxy is held first: the first try gets the dead one, and its retry waits for the other
    await b.admin.addProxies({ pool: "headers", proxies: [{ url: `http://127.0.0.1:${proxy.port}` }] });
    const rival = new ProxyBrokerClient({ address: b.address, pool: "headers", workerId: "forward-headers-rival" });
    try {
      const held = await rival.acquire("http://retry.test/");
      expect(held.proxy.url).toBe(`http://127.0.0.1:${proxy.port}`);
      // a proxy that drops every connection: the working one is given back once it was tried, so
      // the retry's wait ends by an event, not by a timer racing the first try
      const dead = createNetServer((socket) => {
        socket.destroy();
        void held.release({ kind: "SUCCESS" });
      });
      await new Promise<void>((r) => dead.listen(0, "127.0.0.1", r));
      const deadPort = (dead.address() as AddressInfo).port;
      await b.admin.addProxies({ pool: "headers", proxies: [{ url: `http://127.0.0.1:${deadPort}` }] });
      const proxyErrors = async (): Promise<number> =>
        metricValue(
          await t.gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total"),
          "proxybroker_gateway_requests_total",
          '{kind="http",outcome="PROXY_ERROR"}',
        );
      const before = await proxyErrors();
      const answer = await raw(
        t.gw.address,
        "GET http://retry.test/r HTTP/1.1\r\nHost: retry.test\r\nX-ProxyBroker-Pool: headers\r\nX-ProxyBroker-Max-Wait: 5\r\nConnection: close\r\n\r\n",
      );
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(proxy.lines.at(-1)).toBe("GET http://retry.test/r HTTP/1.1");
      // the first try went through the dead proxy: the retry was needed
      expect(await proxyErrors()).toBe(before + 1);
      dead.close();
    } finally {
      await rival.close();
    }
  });

  it("the site's time starts once the lease is held: a wait for a proxy longer than the upstream timeout is no 504", async () => {
    const rival = new ProxyBrokerClient({ address: b.address, pool: "raw", workerId: "forward-waiter" });
    try {
      const held = await rival.acquire("http://waited.test/");
      // released well past the gateway's 300 ms upstream timeout; any moment within the wait passes
      setTimeout(() => void held.release({ kind: "SUCCESS" }), 800);
      const answer = await raw(
        t.gw.address,
        `GET http://waited.test/w HTTP/1.1\r\nHost: waited.test\r\nProxy-Authorization: ${basic("pool-raw-wait-5")}\r\nConnection: close\r\n\r\n`,
      );
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      await rival.close();
    }
  });

  it("a client gone while its lease was awaited: nothing is sent, the lease is released at once as ABANDONED", async () => {
    const rival = new ProxyBrokerClient({ address: b.address, pool: "raw", workerId: "forward-rival" });
    try {
      const held = await rival.acquire("http://gone.test/");
      const sentBefore = proxy.lines.length;
      const socket = connect(Number(t.gw.address.split(":")[1]), "127.0.0.1", () =>
        socket.write(`GET http://gone.test/g HTTP/1.1\r\nHost: gone.test\r\nProxy-Authorization: ${basic("pool-raw-wait-5")}\r\n\r\n`),
      );
      socket.on("error", () => undefined);
      await new Promise((r) => setTimeout(r, 200));
      socket.destroy();
      await new Promise((r) => setTimeout(r, 100));
      // the gateway's acquire gets the proxy now, finds its client gone and gives it back
      await held.release({ kind: "SUCCESS" });
      await expect
        .poll(
          async () =>
            metricValue(
              await t.gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total"),
              "proxybroker_gateway_requests_total",
              '{kind="http",outcome="ABANDONED"}',
            ),
          { timeout: 3_000 },
        )
        .toBe(1);
      const again = await rival.acquire("http://gone.test/", { maxWaitMs: 1_000 });
      await again.release({ kind: "SUCCESS" });
      expect(proxy.lines.length).toBe(sentBefore);
    } finally {
      await rival.close();
    }
  });
});
