import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { BrokerMetrics } from "../../../src/observe/metrics.js";

const DASHBOARD = new URL("../../../docs/grafana-dashboard.json", import.meta.url);

interface Panel {
  readonly type: string;
  readonly title: string;
  readonly targets?: readonly { readonly expr: string }[];
}

function metrics(): BrokerMetrics {
  return new BrokerMetrics({
    waiting: () => 0,
    domainPacing: () => Promise.resolve([]),
    servesPool: (pool) => pool === "default",
    pools: () => ["default"],
    proxies: () =>
      Promise.resolve({
        byState: { ACTIVE: 1, QUARANTINED: 0, BLACKLISTED: 0, DISABLED: 0 },
        byTier: { "": { ACTIVE: 1 } },
        exits: { unknown: 0, distinct: 1, shared: [] },
        counted: 1,
      }),
    liveLeases: () => 0,
    recoveries: () => Promise.resolve([]),
  });
}

describe("metrics and the Grafana dashboard (docs/grafana-dashboard.json)", () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as { panels: Panel[]; templating: { list: { query: unknown }[] } };
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  const queried = new Set(
    exprs.flatMap((e) => [...e.matchAll(/proxybroker_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ""))),
  );
  const exported = new Set(
    metrics()
      .registry.getMetricsAsArray()
      .map((m) => m.name),
  );

  it("queries only metrics the broker exports", () => {
    expect(exprs.length).toBeGreaterThan(10);
    for (const name of queried) expect(exported, `dashboard queries ${name}`).toContain(name);
  });

  it("shows every metric the broker exports", () => {
    for (const name of exported) expect(queried, `${name} is on no panel`).toContain(name);
  });

  it("names pools only when the broker serves them: label values stay bounded", async () => {
    const m = metrics();
    m.denied("invented-by-a-client", "NO_PROXY_AVAILABLE");
    m.denied("", "INVALID_ARGUMENT");
    m.granted("default", "");
    const labels = (await m.denials.get()).values.map((v) => v.labels["pool"]);
    expect(labels.sort()).toEqual(["default", "other"]);
    expect((await m.callerGrants.get()).values[0]?.labels["caller"]).toBe("-");
  });

  it("lists a pool's proxies once per scrape for every gauge that counts them", async () => {
    let listed = 0;
    const m = new BrokerMetrics({
      waiting: () => 0,
      domainPacing: () => Promise.resolve([]),
      servesPool: () => true,
      pools: () => ["default"],
      proxies: () => {
        listed++;
        return Promise.resolve({
          byState: { ACTIVE: 3, QUARANTINED: 0, BLACKLISTED: 0, DISABLED: 0 },
          byTier: { "": { ACTIVE: 3 } },
          exits: { unknown: 0, distinct: 2, shared: [{ exitIp: "203.0.113.1", proxies: 2 }] },
          counted: 3,
        });
      },
      liveLeases: () => 0,
      recoveries: () => Promise.resolve([]),
    });
    const text = await m.registry.metrics();
    expect(listed).toBe(1);
    expect(text).toMatch(/proxybroker_proxies\{[^}]*state="ACTIVE"[^}]*\} 3/);
    expect(text).toMatch(/proxybroker_exit_ips\{[^}]*proxies="2"[^}]*\} 1/);
    expect(text).toMatch(/proxybroker_exit_ips\{[^}]*proxies="1"[^}]*\} 1/);
  });
});
