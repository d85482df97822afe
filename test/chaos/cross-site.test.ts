/**
 * The isolation group's checks of a chaos run (CHAOS_ISOLATION) as `check` wires them: one IP
 * inside two sites of the group at once fails the run, with the IP, sites and times kept for the
 * summary; requests that only touch, two at one site (the per-site check's), or a run without a
 * group do not; and every site's policy must still name the group at the end.
 */
import { describe, expect, it } from "vitest";
import { check } from "../../chaos/checker.js";
import type { CheckInput } from "../../chaos/checker.js";
import { policiesMissing } from "../../chaos/cross-site.js";
import type { IsolationInput } from "../../chaos/cross-site.js";
import type { SiteRequest } from "../../chaos/records.js";

const S1 = "127.0.1.1:8001";
const S2 = "127.0.1.2:8002";
const S3 = "127.0.1.3:8003";
const D = ["127.0.1.1", "127.0.1.2", "127.0.1.3"];
const IP = "127.0.0.10";
const P1 = "127.0.0.1:3001";

function req(site: string, start: number, end: number, ip = IP): SiteRequest {
  return { site, ip, start, end, answer: "page" };
}

const IN_FORCE = D.map((pattern) => ({ pattern, isolationGroup: "market" }));

function group(o: Partial<IsolationInput> = {}): IsolationInput {
  return { group: "market", sites: [S1, S2, S3], domains: D, policiesAtEnd: IN_FORCE, ...o };
}

/** A run that passes every other check. */
function input(requests: readonly SiteRequest[], isolation: IsolationInput | undefined): CheckInput {
  return {
    requests,
    leases: [
      {
        worker: "w1",
        gen: 0,
        kind: "stub",
        api: "unary",
        lease: "a",
        proxy: P1,
        domain: D[0] ?? "",
        token: "1",
        source: "broker",
        grantedAt: 1,
      },
    ],
    expectedProxies: [P1],
    listed: [{ id: P1, state: "ACTIVE" }],
    probes: [{ proxy: P1, domain: D[0] ?? "", granted: true, detail: "" }],
    ...(isolation === undefined ? {} : { isolation }),
  };
}

describe("check with an isolation group", () => {
  it("passes one IP that moves from site to site, one request at a time (touching counts as apart)", () => {
    const r = check(input([req(S1, 100, 110), req(S2, 110, 120), req(S3, 120, 130), req(S1, 130, 140)], group()));
    expect(r.isolation.crossSiteOverlaps).toEqual([]);
    expect(r.failures).toEqual([]);
  });

  it("fails one IP inside two sites of the group at once, and keeps the IP, sites and times", () => {
    const r = check(input([req(S1, 100, 150), req(S2, 140, 160)], group()));
    expect(r.failures).toEqual(["1 cross-site overlaps in isolation group market"]);
    const [o] = r.isolation.crossSiteOverlaps;
    expect([o?.ip, o?.first.site, o?.first.start, o?.first.end, o?.second.site, o?.second.start, o?.second.end]).toEqual([
      IP,
      S1,
      100,
      150,
      S2,
      140,
      160,
    ]);
  });

  it("finds a short request elsewhere inside a long one (a stream) after others ended", () => {
    const r = check(input([req(S1, 0, 1_000), req(S1, 1_000, 1_010), req(S2, 10, 20), req(S3, 500, 510)], group()));
    expect(r.isolation.crossSiteOverlaps.map((o) => [o.first.site, o.second.site])).toEqual([
      [S1, S2],
      [S1, S3],
    ]);
  });

  it("lists them in order of the second request's start, across IPs", () => {
    const r = check(
      input([req(S1, 300, 350, "127.0.0.11"), req(S2, 340, 360, "127.0.0.11"), req(S1, 100, 150), req(S3, 120, 130)], group()),
    );
    expect(r.isolation.crossSiteOverlaps.map((o) => [o.ip, o.second.start])).toEqual([
      [IP, 120],
      ["127.0.0.11", 340],
    ]);
  });

  it("leaves two requests at one site to the per-site check, and two IPs on two sites alone", () => {
    const r = check(input([req(S1, 100, 150), req(S1, 140, 160), req(S2, 100, 150, "127.0.0.11")], group()));
    expect(r.isolation.crossSiteOverlaps).toEqual([]);
    expect(r.failures).toEqual(["1 overlaps at the sites"]);
  });

  it("counts only the sites of the group", () => {
    const r = check(input([req(S1, 100, 150), req(S2, 140, 160)], group({ sites: [S1, S3] })));
    expect(r.isolation.crossSiteOverlaps).toEqual([]);
  });

  it("fails when a site's policy no longer names the group at the end", () => {
    const r = check(input([], group({ policiesAtEnd: IN_FORCE.slice(1) })));
    expect(r.failures).toContain("1 sites whose policy does not name isolation group market at the end");
  });
});

describe("check without an isolation group", () => {
  it("counts cross-site overlaps for information but fails nothing on them", () => {
    const r = check(input([req(S1, 100, 150), req(S2, 140, 160)], group({ group: undefined, policiesAtEnd: [] })));
    expect(r.isolation.crossSiteOverlaps).toHaveLength(1);
    expect(r.isolation.policiesMissing).toEqual([]);
    expect(r.failures).toEqual([]);
  });

  it("has no cross-site count when the run gave no isolation input", () => {
    const r = check(input([req(S1, 100, 150), req(S2, 140, 160)], undefined));
    expect(r.isolation.group).toBeUndefined();
    expect(r.isolation.crossSiteOverlaps).toEqual([]);
  });
});

describe("policiesMissing", () => {
  it("names the sites without a policy, without an isolation group, or in another one", () => {
    const listed = [
      { pattern: "127.0.1.1", isolationGroup: "market" },
      { pattern: "127.0.1.2", isolationGroup: "" },
      { pattern: "127.0.1.3", isolationGroup: "social" },
      { pattern: "127.0.1.9", isolationGroup: "market" },
    ];
    expect(policiesMissing([...D, "127.0.1.4"], "market", listed)).toEqual([
      { domain: "127.0.1.2", why: "no isolation group" },
      { domain: "127.0.1.3", why: "isolation group social" },
      { domain: "127.0.1.4", why: "no policy" },
    ]);
    expect(policiesMissing(D, "market", IN_FORCE)).toEqual([]);
  });
});
