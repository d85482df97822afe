import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Server } from "node:http";
import { startMetricsServer } from "../../src/metrics-server.js";
import { startBroker } from "../support/broker.js";
import type { TestBroker } from "../support/broker.js";
import { freePort } from "../support/broker-process.js";

/** GET /metrics serves the broker's counters in Prometheus text format. */
describe("metrics endpoint", () => {
  let b: TestBroker;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    b = await startBroker({ kind: "embedded" });
    await b.admin.addProxies({ proxies: [{ url: "10.4.0.1:8080" }] });
    const address = `127.0.0.1:${await freePort()}`;
    server = await startMetricsServer(address, b.server.metrics.registry);
    url = `http://${address}/metrics`;
  });
  afterAll(async () => {
    server.close();
    await b.stop();
  });

  it("counts grants and serves them", async () => {
    await b.broker.acquireLease({ workerId: "m", domain: "m.example" });
    const res = await fetch(url);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/proxybroker_grants_total\{pool="default"\} 1/);
    expect(text).toContain("proxybroker_waiting_acquires 0");
    expect((await fetch(url.replace("/metrics", "/other"))).status).toBe(404);
  });
});
