/**
 * Tunnels to sites whose pacing the broker does not know. Inside a CONNECT tunnel the site's
 * answers are encrypted: the gateway cannot report a 429, so adaptive pacing could never learn the
 * limit of a host no policy names. The broker says so on the grant (`Lease.pacingUnknown`), and the
 * gateway then keeps the tunnel's lease `unknownIntervalMs` after the tunnel closed: its pair's
 * next grant, to anyone, comes no sooner. A host a policy names is paced by the broker, and its
 * tunnel's lease is released when the tunnel closes. Against a broker on a real redis-server, a
 * real tinyproxy, a TLS site on loopback and curl.
 */
import { execFile } from "node:child_process";
import type { Server } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import type { Gateway } from "../../../src/gateway/gateway.js";
import { makeCerts } from "../../support/certs.js";
import { startTestGateway } from "../../support/gateway-under-test.js";
import type { TestGateway } from "../../support/gateway-under-test.js";
import { startTinyproxies } from "../../support/tinyproxies.js";
import type { Tinyproxies } from "../../support/tinyproxies.js";
import { withBroker } from "../../support/with-broker.js";

const run = promisify(execFile);

describe("tunnels to sites whose pacing the broker does not know", () => {
  const b = withBroker({ kind: "redis" });
  let tiny: Tinyproxies;
  let tls: Server;
  let tlsBase: string;
  /** When the site served each request (epoch ms). */
  const served: number[] = [];
  const gateways: TestGateway[] = [];
  const clients: ProxyBrokerClient[] = [];
  let pools = 0;

  /** A pool of its own with the one tinyproxy, so that its pair is the only one for the site. */
  const newPool = async (): Promise<string> => {
    const pool = `tunnel-pacing-${++pools}`;
    await b.admin.addProxies({ pool, proxies: tiny.proxies.map((p) => ({ url: `http://${p.address}` })) });
    return pool;
  };

  const startGateway = async (pool: string, unknownIntervalMs: number): Promise<Gateway> => {
    const t = await startTestGateway({
      address: b.address,
      workerId: `tunnel-pacing-gateway-${gateways.length}`,
      over: { pool, tunnels: { idleMs: 60_000, maxLifeMs: 600_000, unknownIntervalMs } },
    });
    gateways.push(t);
    return t.gw;
  };

  const worker = (pool: string): ProxyBrokerClient => {
    const c = new ProxyBrokerClient({ address: b.address, pool, workerId: `tunnel-pacing-worker-${clients.length}` });
    clients.push(c);
    return c;
  };

  /** One HTTPS GET through the gateway, a tunnel of its own (curl closes it once the page is in). */
  const getThroughTunnel = async (gw: Gateway): Promise<string> =>
    (await run("curl", ["-sk", "--max-time", "20", "-x", `http://${gw.address}`, `${tlsBase}/`])).stdout;

  beforeAll(async () => {
    tiny = await startTinyproxies({ count: 1 });
    const certs = await makeCerts();
    tls = createTlsServer({ key: await certs.read(certs.serverKeyFile), cert: await certs.read(certs.serverCertFile) }, (_req, res) => {
      served.push(Date.now());
      res.writeHead(200, { "content-type": "text/html" }).end("secure page");
    });
    await new Promise<void>((r) => tls.listen(0, "127.0.0.1", r));
    tlsBase = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.stop()));
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    tls.closeAllConnections();
    await new Promise<void>((r) => tls.close(() => r()));
    await tiny.stop();
  });

  it("the broker says on a grant whether it knows the pair's pacing: not for a host no policy names until it learned a limit", {
    timeout: 20_000,
  }, async () => {
    const pool = await newPool();
    const w = worker(pool);
    const first = await w.acquire(tlsBase);
    expect(first.pacingUnknown).toBe(true);
    // a 429 teaches adaptive pacing an interval (from 0: 1 s): paced from now on, and known
    await first.release({ kind: "RATE_LIMITED", httpStatus: 429 });
    const learned = await w.acquire(tlsBase, { maxWaitMs: 10_000 });
    expect(learned.pacingUnknown).toBe(false);
    await learned.release({ kind: "ABANDONED" });
    // a policy names another pool's host: known (here: not paced at all)
    const configured = await newPool();
    await b.admin.setDomainPolicy({ pool: configured, policy: { pattern: "127.0.0.1" } });
    const named = await worker(configured).acquire(tlsBase);
    expect(named.pacingUnknown).toBe(false);
    await named.release({ kind: "ABANDONED" });
  });

  it("a tunnel to a host no policy names keeps its lease the interval after it closed: the pair's next grant comes no sooner", {
    timeout: 30_000,
  }, async () => {
    const pool = await newPool();
    const gw = await startGateway(pool, 1_500);
    served.length = 0;
    expect(await getThroughTunnel(gw)).toBe("secure page");
    const servedAt = served[0] ?? 0;
    // the tunnel closed after the site served it; its lease is held 1.5 s past that, then released
    const next = await worker(pool).acquire(tlsBase, { maxWaitMs: 10_000 });
    const grantedAt = Date.now();
    expect(grantedAt - servedAt).toBeGreaterThanOrEqual(1_500);
    await next.release({ kind: "ABANDONED" });
    expect(await gw.metrics.registry.getSingleMetricAsString("proxybroker_gateway_requests_total")).toContain(
      'kind="tunnel",outcome="SUCCESS"} 1',
    );
  });

  it("a tunnel to a host a policy paces releases its lease when it closes: the broker spaces the pair", { timeout: 40_000 }, async () => {
    const pool = await newPool();
    await b.admin.setDomainPolicy({ pool, policy: { pattern: "127.0.0.1", minInterval: durationFromMs(200) } });
    // held for a minute, the next acquire (20 s at most) would be denied
    const gw = await startGateway(pool, 60_000);
    expect(await getThroughTunnel(gw)).toBe("secure page");
    const next = await worker(pool).acquire(tlsBase, { maxWaitMs: 20_000 });
    expect(next.pacingUnknown).toBe(false);
    await next.release({ kind: "ABANDONED" });
  });
});
