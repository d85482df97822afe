import { createServer } from "node:http";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NoProxyAvailableError, ProxyBrokerClient } from "@proxybroker/sdk";
import { startBroker } from "../../support/broker.js";
import type { TestBroker } from "../../support/broker.js";
import { startForwardProxy } from "../../support/forward-proxy.js";
import type { ForwardProxy } from "../../support/forward-proxy.js";

/** client.fetch through a real HTTP proxy on loopback, against a broker on the embedded store. */
describe("client.fetch", () => {
  let target: Server;
  let base: string;
  let proxy: ForwardProxy;
  let b: TestBroker;
  let client: ProxyBrokerClient;

  beforeAll(async () => {
    target = createServer((req, res) => {
      if (req.url === "/ok") res.writeHead(200, { "content-type": "text/html" }).end("<div class='price'>9.99</div>");
      else if (req.url === "/slow-down") res.writeHead(429, { "retry-after": "30" }).end("too many");
      else if (req.url === "/captcha") res.writeHead(200, { "content-type": "text/html" }).end("Please solve this CAPTCHA");
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
    const addr = target.address();
    base = `http://127.0.0.1:${typeof addr === "object" && addr !== null ? addr.port : 0}`;
    proxy = await startForwardProxy();
    b = await startBroker({ kind: "embedded" });
    await b.admin.addProxies({ proxies: [{ url: proxy.url }] });
    client = new ProxyBrokerClient({ address: b.address, workerId: "fetcher" });
  });
  afterAll(async () => {
    await client.close();
    await b.stop();
    await proxy.close();
    await new Promise<void>((r) => target.close(() => r()));
  });

  it("fetches through the leased proxy, classifies SUCCESS and releases", async () => {
    const before = proxy.requests();
    const r = await client.fetch(`${base}/ok`, { expectations: { markers: [".price"] } });
    expect(r.response.status).toBe(200);
    expect(await r.response.text()).toContain("9.99");
    expect(r.outcome.kind).toBe("SUCCESS");
    expect(r.source).toBe("broker");
    expect(proxy.requests()).toBe(before + 1);
    // Released: the proxy is free again for the same domain.
    expect((await client.fetch(`${base}/ok`)).outcome.kind).toBe("SUCCESS");
  });

  it("reports a captcha page as BLOCKED and a 429 as RATE_LIMITED, which cools the pair down at the broker", async () => {
    expect((await client.fetch(`${base}/captcha`)).outcome.kind).toBe("BLOCKED");
    // BLOCKED banned the only proxy for this domain-key: the broker has nothing left for it.
    await expect(client.acquire(`${base}/ok`)).rejects.toBeInstanceOf(NoProxyAvailableError);
    // Another domain-key (localhost) still gets the proxy, and a 429 there cools that pair.
    const other = `http://localhost:${new URL(base).port}`;
    const limited = await client.fetch(`${other}/slow-down`);
    expect(limited.outcome.kind).toBe("RATE_LIMITED");
    expect(limited.outcome.retryAfterMs).toBe(30_000);
    const denied = await client.acquire(`${other}/ok`).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(NoProxyAvailableError);
    expect((denied as NoProxyAvailableError).name).toBe("NoProxyAvailableError");
    expect((denied as NoProxyAvailableError).code).toBe(8); // RESOURCE_EXHAUSTED
    expect((denied as NoProxyAvailableError).retryAfterMs).toBeGreaterThan(25_000);
  });
});
