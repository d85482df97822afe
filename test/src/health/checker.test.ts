import { createServer } from "node:http";
import type { Server } from "node:http";
import { createServer as createNetServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { MemoryStore } from "@proxybroker/sdk/engine";
import { HealthChecker } from "../../../src/health/checker.js";
import { probeProxy } from "../../../src/health/probe.js";
import { startForwardProxy } from "../../support/forward-proxy.js";
import type { ForwardProxy } from "../../support/forward-proxy.js";

async function closedPort(): Promise<number> {
  const srv = createNetServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const addr = srv.address();
  const port = typeof addr === "object" && addr !== null ? addr.port : 0;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** The health checker through real HTTP proxies on loopback (SPEC §2: +3 / −10 / × 0.7). */
describe("health checker", () => {
  let target: Server;
  let targetUrl: string;
  let good: ForwardProxy;
  let denying: ForwardProxy;

  beforeAll(async () => {
    // an echo answer on /echo (what the site sees as the client), "ok" elsewhere
    target = createServer((req, res) => {
      if (req.url === "/echo")
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ip: req.socket.remoteAddress }));
      else res.writeHead(200).end("ok");
    });
    await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
    const addr = target.address();
    targetUrl = `http://127.0.0.1:${typeof addr === "object" && addr !== null ? addr.port : 0}/health`;
    good = await startForwardProxy();
    denying = await startForwardProxy({ deny: true });
  });
  afterAll(async () => {
    await good.close();
    await denying.close();
    await new Promise<void>((r) => target.close(() => r()));
  });

  it("probes: pass through a working proxy, fail on 407, error when nothing listens", async () => {
    const result = async (proxyUrl: string, url = targetUrl): Promise<string> =>
      (await probeProxy({ proxyUrl, targetUrl: url, timeoutMs: 2_000 })).result;
    expect(await result(good.url)).toBe("pass");
    expect(await result(denying.url)).toBe("fail");
    expect(await result(`http://127.0.0.1:${await closedPort()}`)).toBe("error");
    expect(await result(denying.url, "https://127.0.0.1:1/")).toBe("fail");
  });

  it("probes: an echo answer shows the exit IP, any other answer none", async () => {
    const echo = targetUrl.replace(/\/health$/, "/echo");
    expect(await probeProxy({ proxyUrl: good.url, targetUrl: echo, timeoutMs: 2_000 })).toEqual({ result: "pass", exitIp: "127.0.0.1" });
    expect(await probeProxy({ proxyUrl: good.url, targetUrl, timeoutMs: 2_000 })).toEqual({ result: "pass", exitIp: "" });
    expect(await probeProxy({ proxyUrl: denying.url, targetUrl: echo, timeoutMs: 2_000 })).toEqual({ result: "fail", exitIp: "" });
  });

  it("scores every proxy of the pool and ends a quarantine early on a pass", async () => {
    let now = 1_000_000;
    const store = new MemoryStore({ scoring: DEFAULT_SCORING, clock: () => now });
    const dead = `127.0.0.1:${await closedPort()}`;
    await store.addProxies("default", [
      { id: good.url.slice(7), url: good.url, tier: "", labels: {} },
      { id: denying.url.slice(7), url: denying.url, tier: "", labels: {} },
      { id: dead, url: `http://${dead}`, tier: "", labels: {} },
      { id: "127.0.0.9:1080", url: "socks5://127.0.0.9:1080", tier: "", labels: {} },
    ]);
    const checker = new HealthChecker({
      store,
      targets: new Map([["default", targetUrl]]),
      intervalMs: 60_000,
      timeoutMs: 2_000,
      concurrency: 4,
      probe: probeProxy,
      clock: () => now,
    });
    // the socks5 proxy is not checked
    expect(await checker.round()).toMatchObject({ total: 3, checked: 3, passed: 1, failed: 1, errors: 1 });
    const scores = Object.fromEntries((await store.listProxies("default", { size: 10, after: "" })).proxies.map((p) => [p.id, p.score]));
    expect(scores[good.url.slice(7)]).toBe(53);
    expect(scores[denying.url.slice(7)]).toBe(40);
    expect(scores[dead]).toBeCloseTo(35);

    // Failing checks drive the good proxy (53) below the floor (10) into quarantine…
    const id = good.url.slice("http://".length);
    for (let i = 0; i < 5; i++) await store.recordHealth("default", id, "fail");
    const quarantined = (await store.listProxies("default", { size: 10, after: "" })).proxies.find((p) => p.id === id);
    expect(quarantined?.state).toBe("QUARANTINED");
    // …and the next round's pass brings it back long before its quarantine would end.
    now += 1_000;
    // the two failing proxies are backed off: only the quarantined one is checked
    expect(await checker.round()).toMatchObject({ total: 1, checked: 1, passed: 1 });
    const back = (await store.listProxies("default", { size: 10, after: "" })).proxies.find((p) => p.id === id);
    expect(back?.state).toBe("ACTIVE");
    expect(good.requests()).toBeGreaterThanOrEqual(3);
  });
  it("checks a failing proxy less often (1, 2, 4 … 8 intervals) until it passes; a manual pass checks all; progress per proxy", async () => {
    let now = 5_000_000;
    const store = new MemoryStore({ scoring: DEFAULT_SCORING, clock: () => now });
    await store.addProxies("default", [
      { id: good.url.slice(7), url: good.url, tier: "", labels: {} },
      { id: denying.url.slice(7), url: denying.url, tier: "", labels: {} },
    ]);
    const interval = 60_000;
    const checker = new HealthChecker({
      store,
      targets: new Map([["default", targetUrl]]),
      intervalMs: interval,
      timeoutMs: 2_000,
      concurrency: 2,
      probe: probeProxy,
      clock: () => now,
    });
    const checkedAt: number[] = [];
    for (let round = 0; round < 12; round++) {
      const r = await checker.round();
      if (r.failed > 0) checkedAt.push(round);
      now += interval;
    }
    // the denying proxy at rounds 0, 1 (1 interval), 3 (2), 7 (4), 15 would be next (8)
    expect(checkedAt).toEqual([0, 1, 3, 7]);
    const seen: string[] = [];
    const all = await checker.pass("default", { all: true, onProgress: (p) => seen.push(`${p.checked}/${p.total} ${p.result}`) });
    expect(all).toMatchObject({ total: 2, checked: 2, passed: 1, failed: 1 });
    expect(seen[0]).toBe("0/2 ");
    expect(seen).toHaveLength(3);
    expect(seen[1]).toMatch(/^1\/2 (pass|fail)$/);
    expect(seen[2]).toMatch(/^2\/2 (pass|fail)$/);
    expect(new Set(seen.slice(1).map((x) => x.split(" ")[1]))).toEqual(new Set(["pass", "fail"]));
    await expect(checker.pass("other")).rejects.toThrow(/no health check URL/);
  });

  it("probes the proxies it is given and records the exit IP an echo answer shows", async () => {
    const store = new MemoryStore({ scoring: DEFAULT_SCORING });
    const added = [
      { id: good.url.slice(7), url: good.url, tier: "", labels: {} },
      { id: denying.url.slice(7), url: denying.url, tier: "", labels: {} },
    ];
    await store.addProxies("default", added);
    const checker = new HealthChecker({
      store,
      targets: new Map([["default", targetUrl.replace(/\/health$/, "/echo")]]),
      intervalMs: 60_000,
      timeoutMs: 2_000,
      concurrency: 2,
      probe: probeProxy,
    });
    const only = new Set(added.map((p) => p.id));
    expect(await checker.pass("default", { only })).toMatchObject({ total: 2, checked: 2, passed: 1, failed: 1 });
    const exits = Object.fromEntries((await store.listProxies("default", { size: 10, after: "" })).proxies.map((p) => [p.id, p.exitIp]));
    expect(exits).toEqual({ [added[0]?.id ?? ""]: "127.0.0.1", [added[1]?.id ?? ""]: "" });
    // the first exit learned is in the audit trail
    expect((await store.listAudit(10)).map((e) => e.detail)).toEqual([`${added[0]?.id} none -> 127.0.0.1`]);
  });
});
