/**
 * The chaos checker on hand-made logs: every check must fail on the case it exists for (an
 * overlap, a repeated or decreasing token, a proxy not back, a pair still busy) and pass on
 * clean logs, including the edge cases a correct run produces (back-to-back requests, equal
 * grant times, hand-overs of fallback leases).
 */
import { describe, expect, it } from "vitest";
import { busyPairs, check, checkFencing, findOverlaps, joinLeases, leasesAt, proxiesNotBack } from "../../chaos/checker.js";
import type { CheckInput } from "../../chaos/checker.js";
import type { EndLine, GrantLine, LeaseLine, LeaseRecord, SiteRequest } from "../../chaos/records.js";

const SITE = "127.0.1.1:8001";
const P1 = "127.0.0.1:3001";
const D1 = "127.0.1.1";

function req(start: number, end: number, o: { ip?: string; site?: string; answer?: string } = {}): SiteRequest {
  return { site: o.site ?? SITE, ip: o.ip ?? "127.0.0.10", start, end, answer: o.answer ?? "page" };
}

function grant(lease: string, token: string | number, at: number, o: Partial<GrantLine> = {}): GrantLine {
  return {
    t: "grant",
    worker: "w1",
    gen: 0,
    kind: "stub",
    api: "unary",
    lease,
    proxy: P1,
    domain: D1,
    token: String(token),
    source: "broker",
    at,
    ...o,
  };
}

function end(lease: string, at: number, o: Partial<EndLine> = {}): EndLine {
  return {
    t: "end",
    worker: "w1",
    gen: 0,
    lease,
    finalLease: lease,
    finalToken: "",
    finalSource: "broker",
    at,
    releasedAt: at + 1,
    how: "released",
    requests: 1,
    pages: 1,
    ...o,
  };
}

/** Leases from grant/end lines (end tokens default to the grant's). */
function leases(...lines: LeaseLine[]): LeaseRecord[] {
  const tokens = new Map(lines.filter((l): l is GrantLine => l.t === "grant").map((g) => [g.lease, g.token]));
  return joinLeases(lines.map((l) => (l.t === "end" && l.finalToken === "" ? { ...l, finalToken: tokens.get(l.lease) ?? "" } : l)));
}

const CLEAN: CheckInput = {
  requests: [req(100, 110), req(110, 120)],
  leases: leases(grant("a", 1, 90), end("a", 111), grant("b", 2, 112), end("b", 121)),
  expectedProxies: [P1],
  listed: [{ id: P1, state: "ACTIVE" }],
  probes: [{ proxy: P1, domain: D1, granted: true, detail: "" }],
};

describe("findOverlaps", () => {
  it("finds two requests of one IP at one site in flight at once", () => {
    const o = findOverlaps([req(100, 150), req(140, 160)]);
    expect(o).toHaveLength(1);
    expect(o[0]?.first.start).toBe(100);
    expect(o[0]?.second.start).toBe(140);
  });

  it("counts every overlapping pair: three at once are three pairs", () => {
    expect(findOverlaps([req(100, 200), req(110, 190), req(120, 180)])).toHaveLength(3);
  });

  it("finds a request inside a long one even after shorter ones ended", () => {
    expect(findOverlaps([req(0, 1_000), req(10, 20), req(500, 510)])).toHaveLength(2);
  });

  it("does not count back-to-back requests (the next starts as the previous ends)", () => {
    expect(findOverlaps([req(100, 110), req(110, 120), req(120, 120)])).toEqual([]);
  });

  it("does not count requests from different IPs or at different sites", () => {
    expect(findOverlaps([req(100, 150), req(120, 160, { ip: "127.0.0.11" }), req(120, 160, { site: "127.0.1.2:8002" })])).toEqual([]);
  });

  it("does not depend on the order of the log", () => {
    expect(findOverlaps([req(140, 160), req(100, 150)])).toHaveLength(1);
  });
});

describe("joinLeases", () => {
  it("joins a grant with its end by worker, process and lease id", () => {
    const [l] = leases(grant("a", 1, 10), end("a", 20));
    expect(l?.end?.at).toBe(20);
    expect(l?.grantedAt).toBe(10);
  });

  it("keeps a grant without an end (its worker was killed) and ignores an end of another process", () => {
    const out = joinLeases([grant("a", 1, 10), end("a", 20, { gen: 1 })]);
    expect(out).toHaveLength(1);
    expect(out[0]?.end).toBeUndefined();
  });
});

describe("checkFencing", () => {
  it("passes strictly increasing tokens in grant order", () => {
    expect(checkFencing(leases(grant("a", 5, 10), grant("b", 6, 20), grant("c", 100, 30)))).toEqual([]);
  });

  it("fails a repeated token", () => {
    const v = checkFencing(leases(grant("a", 5, 10), grant("b", 5, 20)));
    expect(v).toHaveLength(1);
    expect(v[0]?.kind).toBe("repeated");
    expect(v[0]?.earlier.lease).toBe("a");
    expect(v[0]?.later.lease).toBe("b");
  });

  it("fails a decreasing token", () => {
    const v = checkFencing(leases(grant("a", 5, 10), grant("b", 4, 20)));
    expect(v.map((x) => x.kind)).toEqual(["decreasing"]);
  });

  it("fails a token repeated further down, not only next to its first use", () => {
    const v = checkFencing(leases(grant("a", 5, 10), grant("b", 7, 20), grant("c", 5, 30)));
    expect(v.map((x) => [x.kind, x.later.lease])).toEqual([["decreasing", "c"]]);
  });

  it("compares tokens as integers beyond 2^53 (uint64 on the wire)", () => {
    expect(checkFencing(leases(grant("a", "9007199254740993", 10), grant("b", "9007199254740992", 20)))).toHaveLength(1);
    expect(checkFencing(leases(grant("a", "9007199254740992", 10), grant("b", "9007199254740993", 20)))).toEqual([]);
  });

  it("keeps pairs apart: the same token on another proxy or domain is fine", () => {
    expect(
      checkFencing(leases(grant("a", 5, 10), grant("b", 5, 20, { proxy: "127.0.0.1:3002" }), grant("c", 5, 30, { domain: "127.0.1.2" }))),
    ).toEqual([]);
  });

  it("orders grants that arrived in the same millisecond by token", () => {
    expect(checkFencing(leases(grant("a", 6, 10), grant("b", 5, 10)))).toEqual([]);
  });

  it("counts a hand-over's token from the end of the lease's use on", () => {
    const ok = leases(
      grant("fb-1", 100, 10, { kind: "sdk", api: "acquire", source: "fallback" }),
      end("fb-1", 50, { finalLease: "b-2", finalToken: "200", finalSource: "broker" }),
      grant("c", 300, 60),
    );
    expect(checkFencing(ok)).toEqual([]);
    const after = leases(
      grant("fb-1", 100, 10, { source: "fallback" }),
      end("fb-1", 50, { finalLease: "b-2", finalToken: "200", finalSource: "broker" }),
      grant("c", 150, 60),
    );
    expect(checkFencing(after).map((v) => [v.kind, v.earlier.lease, v.later.lease])).toEqual([["decreasing", "fb-1", "c"]]);
  });

  it("fails a hand-over to a token not above the lease's own", () => {
    const v = checkFencing(
      leases(
        grant("fb-1", 100, 10, { source: "fallback" }),
        end("fb-1", 50, { finalLease: "b-2", finalToken: "90", finalSource: "broker" }),
      ),
    );
    expect(v.map((x) => x.kind)).toEqual(["handover"]);
  });
});

describe("proxiesNotBack and busyPairs", () => {
  it("names proxies missing from the pool or not ACTIVE", () => {
    expect(
      proxiesNotBack(
        ["a:1", "b:1", "c:1"],
        [
          { id: "a:1", state: "ACTIVE" },
          { id: "b:1", state: "QUARANTINED" },
        ],
      ),
    ).toEqual([
      { id: "b:1", why: "QUARANTINED" },
      { id: "c:1", why: "missing from the pool" },
    ]);
  });

  it("names the pairs that could not be acquired", () => {
    const probes = [
      { proxy: P1, domain: D1, granted: true, detail: "" },
      { proxy: P1, domain: "127.0.1.2", granted: false, detail: "RESOURCE_EXHAUSTED" },
    ];
    expect(busyPairs(probes).map((p) => p.domain)).toEqual(["127.0.1.2"]);
  });
});

describe("leasesAt", () => {
  it("finds the leases of a pair live at a moment, and those whose worker was killed within the horizon", () => {
    const all = leases(grant("a", 1, 10), end("a", 20), grant("b", 2, 30), grant("c", 3, 15, { proxy: "127.0.0.1:3002" }));
    expect(leasesAt(all, { proxy: P1, domain: D1 }, 18, 100).map((l) => l.lease)).toEqual(["a"]);
    expect(leasesAt(all, { proxy: P1, domain: D1 }, 40, 100).map((l) => l.lease)).toEqual(["b"]);
    expect(leasesAt(all, { proxy: P1, domain: D1 }, 500, 100)).toEqual([]);
  });
});

describe("check", () => {
  it("passes a clean run", () => {
    expect(check(CLEAN).failures).toEqual([]);
  });

  it("fails on an overlap", () => {
    const r = check({ ...CLEAN, requests: [req(100, 115), req(110, 120)] });
    expect(r.overlaps).toHaveLength(1);
    expect(r.failures).toEqual(["1 overlaps at the sites"]);
  });

  it("fails on a repeated or decreasing token", () => {
    expect(check({ ...CLEAN, leases: leases(grant("a", 2, 90), grant("b", 2, 112)) }).failures).toEqual(["1 fencing token violations"]);
    expect(check({ ...CLEAN, leases: leases(grant("a", 3, 90), grant("b", 2, 112)) }).failures).toEqual(["1 fencing token violations"]);
  });

  it("fails when a proxy is not back or a pair is still busy", () => {
    expect(check({ ...CLEAN, listed: [] }).failures).toEqual(["1 proxies not back in the pool"]);
    expect(check({ ...CLEAN, probes: [{ proxy: P1, domain: D1, granted: false, detail: "RESOURCE_EXHAUSTED" }] }).failures).toEqual([
      "1 (proxy, domain) pairs still busy one TTL after the last worker stopped",
    ]);
  });

  it("fails a run where nothing was leased or probed", () => {
    expect(check({ ...CLEAN, leases: [], probes: [] }).failures).toEqual([
      "no (proxy, domain) pair was probed at the end",
      "no lease was granted",
    ]);
  });
});
