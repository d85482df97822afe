/**
 * A gateway keeps a bounded number of pools (GATEWAY_MAX_POOLS): beyond it a request naming a new
 * pool gets a 400 that says so, a flood of pool names grows nothing, and a pool's client idle for
 * GATEWAY_POOL_IDLE_MS is closed and leaves the pool at the broker. Real gRPC to an in-process
 * broker, a real forward proxy, a real site.
 */
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import type { Gateway } from "../../../src/gateway/gateway.js";
import { PoolClients } from "../../../src/gateway/pool-clients.js";
import { startTestGateway } from "../../support/gateway-under-test.js";
import type { TestGateway } from "../../support/gateway-under-test.js";
import { withBroker } from "../../support/with-broker.js";
import { startForwardProxy } from "../../support/forward-proxy.js";
import type { ForwardProxy } from "../../support/forward-proxy.js";
import { getThrough } from "../../support/gateway-crawl.js";

describe("the gateway's pools", () => {
  const b = withBroker();
  let proxy: ForwardProxy;
  let site: Server;
  let base: string;
  let clients: PoolClients;
  let t: TestGateway;
  let gw: Gateway;

  beforeAll(async () => {
    site = createServer((_req, res) => res.end("page"));
    await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    proxy = await startForwardProxy();
    for (const pool of ["default", "p1", "p2", "p3"]) await b.admin.addProxies({ pool, proxies: [{ url: proxy.url }] });
    clients = new PoolClients({
      pool: "default",
      maxPools: 3,
      idleMs: 1_000,
      make: (pool) => new ProxyBrokerClient({ address: b.address, pool, workerId: "pool-gateway" }),
    });
    clients.get("default");
    t = await startTestGateway({ address: b.address, workerId: "pool-gateway", over: { client: (pool) => clients.get(pool) } });
    gw = t.gw;
  });
  afterAll(async () => {
    await t?.stop();
    await clients?.closeAll();
    await proxy?.close();
    site?.close();
  });

  const workersOf = async (pool: string) => (await b.store.liveWorkers(pool, Date.now() - 60_000)).map((w) => w.workerId);

  it("serves at most GATEWAY_MAX_POOLS pools at once: beyond, a 400 naming it; a flood of names grows nothing", {
    timeout: 30_000,
  }, async () => {
    expect((await getThrough(gw.address, `${base}/a`, { auth: "pool-p1:x" })).status).toBe(200);
    expect((await getThrough(gw.address, `${base}/a`, { auth: "pool-p2:x" })).status).toBe(200);
    const over = await getThrough(gw.address, `${base}/a`, { auth: "pool-p3:x" });
    expect(over.status).toBe(400);
    expect(over.body).toContain("GATEWAY_MAX_POOLS");
    for (let i = 0; i < 200; i++) expect((await getThrough(gw.address, `${base}/a`, { auth: `pool-flood${i}:x` })).status).toBe(400);
    expect(clients.size).toBe(3);
    await expect.poll(() => workersOf("p1")).toContain("pool-gateway");
  });

  it("closes a pool's idle client, which leaves the pool; the pool is served again when named", { timeout: 30_000 }, async () => {
    await new Promise((r) => setTimeout(r, 1_100));
    await clients.sweep();
    expect(clients.size).toBe(1); // the gateway's own pool stays
    expect(await workersOf("p1")).not.toContain("pool-gateway");
    expect(await workersOf("default")).toContain("pool-gateway");
    expect((await getThrough(gw.address, `${base}/a`, { auth: "pool-p3:x" })).status).toBe(200);
    expect(clients.size).toBe(2);
  });
});
