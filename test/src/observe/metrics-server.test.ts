import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Server } from "node:http";
import { startMetricsServer } from "../../../src/observe/metrics-server.js";
import { withBroker } from "../../support/with-broker.js";
import { freePort } from "../../support/broker-process.js";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { durationFromMs } from "@bufbuild/protobuf/wkt";

/** The value of one sample, or undefined when the text has none. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/([a-z_]+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v) && Object.keys(have).length === Object.keys(labels).length)
      return Number(m[3]);
  }
  return undefined;
}

/** GET /metrics serves the broker's counters in Prometheus text format. */
describe("metrics endpoint", () => {
  const b = withBroker();
  let server: Server;
  let url: string;

  beforeAll(async () => {
    await b.admin.addProxies({ proxies: [{ url: "10.4.0.1:8080" }] });
    const address = `127.0.0.1:${await freePort()}`;
    server = await startMetricsServer(address, b.server.metrics.registry);
    url = `http://${address}/metrics`;
  });
  afterAll(async () => {
    server.close();
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

  it("shows proxies by pool, tier and state, live leases, denials by reason, waits, reported outcomes and recovery times", async () => {
    await b.admin.addProxies({
      proxies: [
        { url: "10.4.0.2:8080", tier: "premium" },
        { url: "10.4.0.3:8080", tier: "premium" },
      ],
    });
    await b.admin.disableProxies({ pool: "default", ids: ["10.4.0.3:8080"] });
    const before = await (await fetch(url)).text(); // the first scrape starts reading the event streams
    expect(sample(before, "proxybroker_proxies", { pool: "default", tier: "", state: "ACTIVE" })).toBe(1);
    expect(sample(before, "proxybroker_proxies", { pool: "default", tier: "premium", state: "ACTIVE" })).toBe(1);
    expect(sample(before, "proxybroker_proxies", { pool: "default", tier: "premium", state: "DISABLED" })).toBe(1);

    const held = await b.broker.acquireLease({ workerId: "m", domain: "live.example", ttl: durationFromMs(60_000) });
    const after1 = await (await fetch(url)).text();
    expect(sample(after1, "proxybroker_live_leases")).toBe(2); // the first test's lease and this one

    // denials, by reason: bad input, an invented pool, none free within max_wait (it waited)
    await expect(b.broker.acquireLease({ workerId: "m", domain: "not a host!" })).rejects.toThrow();
    await expect(b.broker.acquireLease({ workerId: "m", pool: "invented", domain: "x.example" })).rejects.toThrow();
    await b.broker.acquireLease({ workerId: "m", domain: "live.example" });
    await expect(b.broker.acquireLease({ workerId: "m", domain: "live.example", maxWait: durationFromMs(150) })).rejects.toThrow();

    // a ban (BLOCKED) and a cool-down (RATE_LIMITED, retry_after 120 s) of the held lease's pair and another
    await b.broker.releaseLease({
      leaseId: held.lease!.leaseId,
      fencingToken: held.lease!.fencingToken,
      outcome: { kind: OutcomeKind.BLOCKED },
    });
    await b.broker.reportOutcomes({
      workerId: "m",
      pool: "default",
      outcomes: [
        {
          proxyId: "10.4.0.1:8080",
          domain: "other.example",
          outcome: { kind: OutcomeKind.RATE_LIMITED, retryAfter: durationFromMs(120_000) },
        },
      ],
    });

    const text = await (await fetch(url)).text();
    expect(sample(text, "proxybroker_denials_total", { pool: "default", reason: "INVALID_ARGUMENT" })).toBe(1);
    expect(sample(text, "proxybroker_denials_total", { pool: "other", reason: "NO_PROXY_AVAILABLE" })).toBe(1);
    expect(sample(text, "proxybroker_denials_total", { pool: "default", reason: "NO_PROXY_AVAILABLE" })).toBe(1);
    expect(sample(text, "proxybroker_wait_seconds_count", { result: "denied" })).toBe(1);
    expect(sample(text, "proxybroker_wait_seconds_bucket", { result: "denied", le: "0.1" })).toBe(0);
    expect(sample(text, "proxybroker_wait_seconds_bucket", { result: "denied", le: "0.25" })).toBe(1);
    expect(sample(text, "proxybroker_releases_total", { outcome: "BLOCKED" })).toBe(1);
    expect(sample(text, "proxybroker_reported_outcomes_total", { kind: "RATE_LIMITED" })).toBe(1);
    // the ban lasts the default ban TTL (1 h), the cool-down its retry_after
    expect(sample(text, "proxybroker_recovery_seconds_count", { kind: "ban" })).toBe(1);
    expect(sample(text, "proxybroker_recovery_seconds_bucket", { kind: "ban", le: "1800" })).toBe(0);
    expect(sample(text, "proxybroker_recovery_seconds_bucket", { kind: "ban", le: "3600" })).toBe(1);
    expect(sample(text, "proxybroker_recovery_seconds_count", { kind: "cool_down" })).toBe(1);
    expect(sample(text, "proxybroker_recovery_seconds_bucket", { kind: "cool_down", le: "60" })).toBe(0);
    expect(sample(text, "proxybroker_recovery_seconds_bucket", { kind: "cool_down", le: "300" })).toBe(1);
    // read once: the next scrape observes nothing new
    const again = await (await fetch(url)).text();
    expect(sample(again, "proxybroker_recovery_seconds_count", { kind: "ban" })).toBe(1);
    // every label value comes from a bounded set: no invented pool, no domain, no worker id
    expect(again).not.toContain("invented");
    expect(again).not.toMatch(/worker=|domain="x\.example"/);
  });
});
