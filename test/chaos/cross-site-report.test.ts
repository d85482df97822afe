/**
 * The isolation group's part of the chaos summary: the check lines, when the policies were set,
 * and the first cross-site overlaps in detail (IP and proxy, sites, times, the leases of that
 * proxy live on either site, the FLUSHALL whose policies were being set again then).
 */
import { describe, expect, it } from "vitest";
import { isolationCheckLines, isolationDetails, policySettingsLine, settingUnderWay, SHOWN } from "../../chaos/cross-site-report.js";
import type { CrossSiteFacts } from "../../chaos/cross-site-report.js";
import type { CrossSiteOverlap, IsolationResult } from "../../chaos/cross-site.js";
import type { PolicySetting } from "../../chaos/isolation-policies.js";
import type { LeaseRecord } from "../../chaos/records.js";

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const S1 = "127.0.1.1:8001";
const S2 = "127.0.1.2:8002";

function overlap(at: number, ip = "127.0.0.10"): CrossSiteOverlap {
  return { ip, first: { site: S1, ip, start: at, end: at + 50 }, second: { site: S2, ip, start: at + 40, end: at + 60 } };
}

function result(o: Partial<IsolationResult> = {}): IsolationResult {
  return { group: "market", sites: [S1, S2], crossSiteOverlaps: [], policiesMissing: [], ...o };
}

function lease(id: string, domain: string, grantedAt: number): LeaseRecord {
  return {
    worker: "chaos-sdk-0",
    gen: 1,
    kind: "sdk",
    api: "acquire",
    lease: id,
    proxy: "127.0.0.1:3001",
    domain,
    token: "7",
    source: "fallback",
    grantedAt,
  };
}

function ended(l: LeaseRecord, at: number): LeaseRecord {
  const end = {
    t: "end",
    worker: l.worker,
    gen: l.gen,
    lease: l.lease,
    finalLease: l.lease,
    finalToken: l.token,
    finalSource: l.source,
  } as const;
  return { ...l, end: { ...end, at, releasedAt: at + 1, how: "released", requests: 1, pages: 1 } };
}

const START: PolicySetting = { why: "start", at: T0 - 10_000, doneAt: T0 - 9_990 };
const WIPE: PolicySetting = { why: "after FLUSHALL", lostAt: T0 + 1_000, at: T0 + 1_002, doneAt: T0 + 1_030 };

function facts(o: Partial<CrossSiteFacts> = {}): CrossSiteFacts {
  return {
    isolation: result({ crossSiteOverlaps: [overlap(T0)] }),
    leases: [
      // its worker stopped using it before the request at the other site started
      ended(lease("lease-s1", "127.0.1.1", T0 - 5), T0 + 20),
      lease("lease-s2", "127.0.1.2", T0 + 30),
      lease("lease-other", "127.0.1.2", T0 - 5_000),
    ],
    proxyOfIp: new Map([["127.0.0.10", "127.0.0.1:3001"]]),
    faultEvents: [],
    policySettings: [START, WIPE],
    horizonMs: 1_000,
    ...o,
  };
}

describe("isolationCheckLines", () => {
  it("names the group and both counts with a group, only the count for information without", () => {
    expect(isolationCheckLines(result({ crossSiteOverlaps: [overlap(T0)] }))).toEqual([
      "  cross-site overlaps (isolation group market, 2 sites: one IP inside two sites at once): 1",
      "  isolation policies at the end (ListDomainPolicies: every site's names market): 0 missing",
    ]);
    expect(isolationCheckLines(result({ group: undefined, crossSiteOverlaps: [overlap(T0), overlap(T0 + 500)] }))).toEqual([
      "  cross-site overlaps (no isolation group: for information, not checked): 2",
    ]);
  });
});

describe("policySettingsLine", () => {
  it("says when the policies were set, and the longest time from a FLUSHALL to set again", () => {
    const later: PolicySetting = { why: "after FLUSHALL", lostAt: T0 + 5_000, at: T0 + 5_001, doneAt: T0 + 5_090 };
    expect(policySettingsLine("market", 3, [START, WIPE, later])).toBe(
      "isolation policies: group market on 3 sites, set at the start in 10 ms, set again after 2 FLUSHALLs, each within 90 ms of it",
    );
    expect(policySettingsLine("market", 3, [START, WIPE])).toBe(
      "isolation policies: group market on 3 sites, set at the start in 10 ms, set again after 1 FLUSHALL, within 30 ms of it",
    );
    expect(policySettingsLine(undefined, 3, [])).toBe("isolation policies: none (CHAOS_ISOLATION unset)");
  });
});

describe("settingUnderWay", () => {
  it("finds the FLUSHALL whose policies were being set again at a moment, inclusive, and not the start", () => {
    expect(settingUnderWay([START, WIPE], T0 + 1_000)).toBe(WIPE);
    expect(settingUnderWay([START, WIPE], T0 + 1_030)).toBe(WIPE);
    expect(settingUnderWay([START, WIPE], T0 + 1_031)).toBeUndefined();
    expect(settingUnderWay([START, WIPE], T0 - 9_995)).toBeUndefined();
  });
});

describe("isolationDetails", () => {
  it("shows the IP, its proxy, both sites with times, and the leases of that proxy live on either site", () => {
    const lines = isolationDetails(facts());
    expect(lines[0]).toBe(
      "cross-site overlap from 127.0.0.10 (proxy 127.0.0.1:3001): 127.0.1.1:8001 12:00:00.000–12:00:00.050 and 127.0.1.2:8002 12:00:00.040–12:00:00.060 (10 ms at once)",
    );
    expect(lines.filter((l) => l.includes("live at")).map((l) => /lease (lease-\S+)/.exec(l)?.[1])).toEqual(["lease-s1", "lease-s2"]);
    expect(lines.some((l) => l.includes("policies being set again"))).toBe(false);
  });

  it("says when the policies were being set again after a FLUSHALL at the time, and names the fault", () => {
    const lines = isolationDetails(
      facts({
        isolation: result({ crossSiteOverlaps: [overlap(T0 + 980)] }),
        faultEvents: [{ kind: "redis-wipe", target: "redis :6390", detail: "FLUSHALL (OK)", at: T0 + 1_000, backAt: T0 + 1_030 }],
      }),
    );
    expect(lines).toContain("    policies being set again then: after FLUSHALL, lost 12:00:01.000, set again by 12:00:01.030");
    expect(lines).toContain("    fault nearby: redis-wipe redis :6390 FLUSHALL (OK) at 12:00:01.000, back 12:00:01.030");
  });

  it("shows the first few and counts the rest, and the policies missing at the end", () => {
    const many = Array.from({ length: SHOWN + 3 }, (_, i) => overlap(T0 + i * 1_000));
    const lines = isolationDetails(
      facts({ leases: [], isolation: result({ crossSiteOverlaps: many, policiesMissing: [{ domain: "127.0.1.2", why: "no policy" }] }) }),
    );
    expect(lines.filter((l) => l.startsWith("cross-site overlap"))).toHaveLength(SHOWN);
    expect(lines).toContain("… and 3 more cross-site overlaps");
    expect(lines).toContain("policy not naming market at the end: 127.0.1.2 (no policy)");
  });

  it("shows nothing without a group, whatever the count", () => {
    expect(isolationDetails(facts({ isolation: result({ group: undefined, crossSiteOverlaps: [overlap(T0)] }) }))).toEqual([]);
  });
});
