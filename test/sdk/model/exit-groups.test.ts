/**
 * Exit groups (G9): proxies of one exit IP go to one worker's share; a proxy without a shared
 * exit keeps exactly the owner it had before exits were known.
 */
import { describe, expect, it } from "vitest";
import { claimedPairs, exitGroups, groupKeys, shareOf, shareOfGroups, type ExitMember, type FallbackClaim } from "@proxybroker/sdk/model";

const NOW = 1_700_000_000_000;
const WORKERS = ["a", "b", "c"];

/** 60 proxies: 0–23 in groups of 4 per exit, 24–41 each on an exit of its own, 42–59 unknown. */
const MEMBERS: ExitMember[] = Array.from({ length: 60 }, (_, i) => ({
  id: `10.4.0.${i}:3128`,
  exitIp: i < 24 ? `198.51.100.${i >> 2}` : i < 42 ? `203.0.113.${i}` : "",
}));
const IDS = MEMBERS.map((m) => m.id);

describe("exitGroups", () => {
  it("keys a group of one by its id and a shared exit by exit:<ip>, in first-member order", () => {
    const groups = exitGroups([
      { id: "p1", exitIp: "x" },
      { id: "p2", exitIp: "" },
      { id: "p3", exitIp: "x" },
      { id: "p4", exitIp: "y" },
      "p5",
      { id: "p1", exitIp: "z" },
    ]);
    expect([...groups]).toEqual([
      ["exit:x", ["p1", "p3"]],
      ["p2", ["p2"]],
      ["p4", ["p4"]],
      ["p5", ["p5"]],
    ]);
    expect(groupKeys([{ id: "p1", exitIp: "x" }, { id: "p3", exitIp: "x" }, "p5"])).toEqual(
      new Map([
        ["p1", "exit:x"],
        ["p3", "exit:x"],
        ["p5", "p5"],
      ]),
    );
  });
});

describe("shareOfGroups", () => {
  it("without shared exits is exactly shareOf of the ids (nothing moves on upgrade)", () => {
    const alone = MEMBERS.slice(24);
    for (const self of WORKERS) {
      expect(shareOfGroups(alone, WORKERS, self)).toEqual(
        shareOf(
          alone.map((m) => m.id),
          WORKERS,
          self,
        ),
      );
      expect(shareOfGroups(IDS, WORKERS, self)).toEqual(shareOf(IDS, WORKERS, self));
    }
  });

  it("gives every group whole to one worker; the shares are disjoint and cover every proxy", () => {
    const shares = WORKERS.map((w) => shareOfGroups(MEMBERS, WORKERS, w));
    const all = shares.flat();
    expect(all.length).toBe(IDS.length);
    expect(new Set(all)).toEqual(new Set(IDS));
    for (let g = 0; g < 6; g++) {
      const ids = IDS.slice(g * 4, g * 4 + 4);
      const owners = shares.map((s) => ids.filter((id) => s.includes(id)).length);
      expect(
        owners.filter((n) => n > 0),
        `group ${g}`,
      ).toEqual([4]);
    }
    // a proxy on an exit of its own, or of no known exit, keeps the owner of its id
    for (const id of IDS.slice(24)) {
      const was = WORKERS.findIndex((w) => shareOf(IDS, WORKERS, w).includes(id));
      expect(shares[was]!.includes(id), id).toBe(true);
    }
  });
});

describe("claimedPairs with exits", () => {
  const claim: FallbackClaim = {
    version: 1,
    members: WORKERS,
    keys: [{ domainKey: "shared.example", shareKey: "shared.example", whole: false, untilMs: NOW + 60_000 }],
  };

  it("reserves for a worker the share its fallback pool cuts: whole exit groups", () => {
    for (const w of WORKERS) expect(claimedPairs(claim, w, MEMBERS, NOW).share).toEqual(shareOfGroups(MEMBERS, WORKERS, w));
    // ids alone read as before
    expect(claimedPairs(claim, "a", IDS, NOW).share).toEqual(shareOf(IDS, WORKERS, "a"));
  });
});
