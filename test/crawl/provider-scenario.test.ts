/**
 * The crawl harness's provider scenario: its settings (CRAWL_SCENARIO, CRAWL_PROVIDER_*), and the
 * sites' view per exit — real requests through the provider simulator's sessions, judged by a
 * real site per client address: two sessions on one exit are one client to the site.
 */
import { afterEach, describe, expect, it } from "vitest";
import { computeExitRows, exitGateFailures, exitTotals, formatExitTable } from "../../crawl/exit-report.js";
import { describeProvider, readProvider } from "../../crawl/provider-options.js";
import { startSites } from "../../crawl/sites.js";
import type { Sites } from "../../crawl/sites.js";
import { getViaProxy } from "../../crawl/workers/common.js";
import { startProviderSim } from "../support/provider-sim.js";
import type { ProviderSim } from "../support/provider-sim.js";

describe("CRAWL_SCENARIO=provider", () => {
  it("is off unless set, and reads the provider's shape with defaults", () => {
    expect(readProvider({})).toBeUndefined();
    expect(readProvider({ CRAWL_SCENARIO: "provider" })).toEqual({
      mode: "username",
      sessions: 12,
      exits: 4,
      assignment: "order",
      minEfficiency: 0.8,
    });
    const ports = readProvider({
      CRAWL_SCENARIO: "provider",
      CRAWL_PROVIDER_MODE: "ports",
      CRAWL_PROVIDER_SESSIONS: "6",
      CRAWL_PROVIDER_EXITS: "2",
      CRAWL_PROVIDER_ASSIGN: "hash",
      CRAWL_PROVIDER_MIN_EFFICIENCY: "0.5",
    });
    expect(ports).toEqual({ mode: "ports", sessions: 6, exits: 2, assignment: "hash", minEfficiency: 0.5 });
    expect(describeProvider(ports!)).toBe("provider: 6 port sessions over 2 exits (hash)");
    expect(() => readProvider({ CRAWL_SCENARIO: "providers" })).toThrow(/CRAWL_SCENARIO/);
    expect(() => readProvider({ CRAWL_SCENARIO: "provider", CRAWL_PROVIDER_MODE: "user" })).toThrow(/username or ports/);
    expect(() => readProvider({ CRAWL_SCENARIO: "provider", CRAWL_PROVIDER_EXITS: "0" })).toThrow(/CRAWL_PROVIDER_EXITS/);
  });
});

describe("the sites per exit", () => {
  let sites: Sites | undefined;
  let sim: ProviderSim | undefined;
  afterEach(async () => {
    await sim?.close();
    await sites?.close();
    sim = undefined;
    sites = undefined;
  });

  it("count two sessions of one exit as one client: 429, too fast and overlap at that exit only", async () => {
    sites = await startSites({
      rules: [{ minIntervalMs: 300, toleranceMs: 0, violationsToBan: 3, violationWindowMs: 60_000, banMs: 20_000, pageDelayMs: [80, 80] }],
    });
    sim = await startProviderSim({ mode: "username", sessions: 4, exits: 2, password: "pw" });
    const site = sites.sites[0]!;
    const proxy = (i: number): string => sim!.sessions[i]!.url.replace(/^http:\/\//, "");
    // s1 and s3 leave from 127.0.0.2, s2 from 127.0.0.3 (round robin)
    expect(sim.sessions.map((s) => sim!.exitOf(s.name))).toEqual(["127.0.0.2", "127.0.0.3", "127.0.0.2", "127.0.0.3"]);
    const both = await Promise.all([
      getViaProxy(proxy(0), `${site.origin}/page/1`, 5_000),
      getViaProxy(proxy(2), `${site.origin}/page/2`, 5_000),
    ]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 429]);
    expect((await getViaProxy(proxy(1), `${site.origin}/page/3`, 5_000)).status).toBe(200);

    const rows = computeExitRows({ sites, hosts: [site.host], exits: sim.exits, sessionsOf: () => 2 });
    expect(rows).toEqual([
      { exit: "127.0.0.2", sessions: 2, requests: 2, rateLimited: 1, tooFast: 1, overlaps: 1, bans: 0 },
      { exit: "127.0.0.3", sessions: 2, requests: 1, rateLimited: 0, tooFast: 0, overlaps: 0, bans: 0 },
    ]);
    expect(exitTotals(rows)).toMatchObject({ exit: "all", requests: 3, rateLimited: 1 });
    expect(sites.addresses()).toEqual(["127.0.0.2", "127.0.0.3"]);
    expect(exitGateFailures(rows, 0.9, 0.8)).toEqual(["exit 127.0.0.2: 1 × 429, 1 too fast, 1 overlaps"]);
    expect(exitGateFailures(rows.slice(1), 0.5, 0.8)).toEqual(["efficiency 0.50 against the exits (at least 0.8)"]);
    expect(formatExitTable(rows)).toContain("| 127.0.0.2 |");
    // a site not counted leaves the rows empty
    expect(computeExitRows({ sites, hosts: [], exits: sim.exits, sessionsOf: () => 2 })[0]).toMatchObject({ requests: 0, overlaps: 0 });
  });
});
