/**
 * The crawl harness's isolation check (crawl/isolation-check.ts) on hand-made site logs: a proxy IP
 * inside two sites of the group at once is counted, the same site twice, two IPs, a site outside
 * the group and intervals that only touch are not; a move to another site of the group sooner
 * than the affinity window after the END of the last request elsewhere is a violation, one exactly
 * the window after is not. The gate fails a strategy whose policies named the group on either, and
 * never a baseline.
 */
import { describe, expect, it } from "vitest";
import { checkIsolation, crossSiteOverlaps } from "../../crawl/isolation-check.js";
import type { LoggedRequest } from "../../crawl/isolation-check.js";
import { isolationGateFailures } from "../../crawl/isolation-report.js";

const A = "127.0.1.1:4001";
const B = "127.0.1.2:4002";
const C = "127.0.1.3:4003";
const FREE = "127.0.1.4:4004";
const GROUP: ReadonlySet<string> = new Set([A, B, C]);
const IP = "127.0.0.10";

function req(site: string, start: number, end: number, ip = IP): LoggedRequest {
  return { site, ip, start, end };
}

describe("crossSiteOverlaps", () => {
  it("counts two requests of one IP to two sites of the group that overlap", () => {
    const found = crossSiteOverlaps([req(A, 100, 200), req(B, 150, 250)], GROUP);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ ip: IP, first: { site: A, start: 100 }, second: { site: B, start: 150 } });
  });

  it("counts a request inside another, and every pair of three at once", () => {
    expect(crossSiteOverlaps([req(A, 100, 500), req(B, 200, 210)], GROUP)).toHaveLength(1);
    expect(crossSiteOverlaps([req(A, 100, 500), req(B, 200, 400), req(C, 300, 350)], GROUP)).toHaveLength(3);
  });

  it("finds an overlap behind a request of the same site", () => {
    // sorted by start: A 100–1000, A 200–210, B 300–310 (overlaps the first A)
    expect(crossSiteOverlaps([req(A, 200, 210), req(B, 300, 310), req(A, 100, 1000)], GROUP)).toHaveLength(1);
  });

  it("does not count the same site twice (that is the sites' own overlap count)", () => {
    expect(crossSiteOverlaps([req(A, 100, 200), req(A, 150, 250)], GROUP)).toHaveLength(0);
  });

  it("does not count intervals that only touch (end == start)", () => {
    expect(crossSiteOverlaps([req(A, 100, 200), req(B, 200, 300)], GROUP)).toHaveLength(0);
    expect(crossSiteOverlaps([req(B, 200, 300), req(A, 100, 200)], GROUP)).toHaveLength(0);
  });

  it("does not count two IPs, nor a site outside the group", () => {
    expect(crossSiteOverlaps([req(A, 100, 200), req(B, 150, 250, "127.0.0.11")], GROUP)).toHaveLength(0);
    expect(crossSiteOverlaps([req(A, 100, 200), req(FREE, 150, 250)], GROUP)).toHaveLength(0);
  });
});

describe("checkIsolation: affinity window", () => {
  it("counts a move sooner than the window after the end of the last request elsewhere", () => {
    const r = checkIsolation([req(A, 0, 100), req(A, 400, 500), req(B, 2000, 2010)], GROUP, 2000);
    expect(r.moves).toBe(1);
    expect(r.affinityViolations).toEqual([{ ip: IP, from: A, fromEnd: 500, to: B, toStart: 2000, gapMs: 1500 }]);
  });

  it("measures from the END of the last request, not its start", () => {
    // 2000 ms after A's start, but 1000 ms after its end
    const r = checkIsolation([req(A, 0, 1000), req(B, 2000, 2010)], GROUP, 2000);
    expect(r.affinityViolations).toHaveLength(1);
    expect(r.affinityViolations[0]?.gapMs).toBe(1000);
  });

  it("accepts a move exactly the window after, and requests to the same site at any pace", () => {
    const r = checkIsolation([req(A, 0, 100), req(A, 110, 120), req(B, 2120, 2130), req(B, 2140, 2150)], GROUP, 2000);
    expect(r.moves).toBe(1);
    expect(r.affinityViolations).toHaveLength(0);
  });

  it("counts every early move, back and forth, and an overlap as one too", () => {
    const r = checkIsolation([req(A, 0, 100), req(B, 150, 160), req(A, 170, 180), req(C, 175, 190)], GROUP, 2000);
    expect(r.moves).toBe(3);
    expect(r.affinityViolations.map((v) => v.gapMs)).toEqual([50, 10, -5]);
    expect(r.crossSiteOverlaps).toHaveLength(1);
  });

  it("compares with the latest end among the other sites", () => {
    // C ended last (at 900) though the IP's previous request went to A
    const r = checkIsolation([req(C, 0, 900), req(A, 100, 110), req(B, 1500, 1510)], GROUP, 1000);
    expect(r.affinityViolations).toEqual([
      { ip: IP, from: C, fromEnd: 900, to: A, toStart: 100, gapMs: -800 },
      { ip: IP, from: C, fromEnd: 900, to: B, toStart: 1500, gapMs: 600 },
    ]);
  });

  it("counts nothing with a window of 0, per IP, or outside the group", () => {
    expect(checkIsolation([req(A, 0, 100), req(B, 100, 110)], GROUP, 0).affinityViolations).toHaveLength(0);
    expect(checkIsolation([req(A, 0, 100), req(B, 150, 160, "127.0.0.11")], GROUP, 2000).affinityViolations).toHaveLength(0);
    const free = checkIsolation([req(A, 0, 100), req(FREE, 150, 160), req(A, 170, 180)], GROUP, 2000);
    expect(free.moves).toBe(0);
    expect(free.affinityViolations).toHaveLength(0);
  });
});

describe("isolationGateFailures", () => {
  const overlapping = checkIsolation([req(A, 0, 100), req(B, 50, 150), req(C, 1000, 1010)], GROUP, 2000);
  const row = (enforced: boolean) => ({ strategy: "proxybroker", label: "proxybroker", enforced, startAt: 0, check: overlapping });

  it("fails a strategy whose policies named the group on a cross-site overlap or an affinity violation", () => {
    expect(isolationGateFailures(row(true))).toEqual(["1 cross-site overlaps in isolation group", "2 affinity window violations"]);
  });

  it("passes a clean run, and never gates a baseline", () => {
    expect(isolationGateFailures({ ...row(true), check: checkIsolation([req(A, 0, 100), req(B, 2100, 2110)], GROUP, 2000) })).toEqual([]);
    expect(isolationGateFailures(row(false))).toEqual([]);
  });
});
