/**
 * The gateway's own plain-HTTP forward (forward-http.ts): what the leased proxy receives (the
 * request line and Host checked, the proxy's own credentials, no hop-by-hop or parameter headers,
 * never the client's gateway credentials) and what the client gets back, against an upstream HTTP
 * proxy that records each request it is sent.
 */
import { createServer } from "node:http";
import type { IncomingHttpHeaders, Server } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { proxyCredentials } from "../../../src/gateway/credentials.js";
import { answeredHeaders, forwardedHeaders, upstreamOf } from "../../../src/gateway/forward-http.js";
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

  it("read a proxy URL once: host, port (80 by default), Basic credentials decoded from the URL", () => {
    expect(upstreamOf("http://us%40er:p%3Ass@10.0.0.1:3128")).toEqual({
      host: "10.0.0.1",
      port: 3128,
      authorization: `Basic ${Buffer.from("us@er:p:ss").toString("base64")}`,
    });
    expect(upstreamOf("http://[::1]/")).toEqual({ host: "::1", port: 80, authorization: undefined });
    expect(() => upstreamOf("socks5://10.0.0.1:1080")).toThrow(/http:/);
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

/** An upstream HTTP proxy that records what it is sent and answers itself (407 for paths with /deny). */
async function recordingProxy(): Promise<{ server: Server; port: number; got: Array<{ line: string; headers: IncomingHttpHeaders }> }> {
  const got: Array<{ line: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer((req, res) => {
    got.push({ line: `${req.method} ${req.url}`, headers: req.headers });
    if ((req.url ?? "").includes("/deny")) {
      res.writeHead(407, { "proxy-authenticate": 'Basic realm="up"' }).end();
      return;
    }
    res.writeHead(200, { "content-type": "text/plain", "keep-alive": "timeout=5", "x-site": "yes" }).end("from the site");
  });
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
    expect(sent?.headers["proxy-authorization"]).toBe(`Basic ${Buffer.from("pu:pp").toString("base64")}`);
    expect(sent?.headers["proxy-connection"]).toBeUndefined();
    expect(sent?.headers["x-proxybroker-max-wait"]).toBeUndefined();
    expect(sent?.headers.accept).toBe("text/html");
  });

  it("an upstream proxy that refuses its credentials (407): a 597 to the client, never the proxy's challenge, and the lease is a PROXY_ERROR", async () => {
    const answer = await raw(t.gw.address, "GET http://site.test/deny HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 597 /);
    expect(answer.toLowerCase()).not.toContain("proxy-authenticate");
    const counted = await t.gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total");
    expect(counted).toMatch(/kind="http",outcome="PROXY_ERROR"} 1/);
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
