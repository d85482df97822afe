import { describe, expect, it } from "vitest";
import { EMPTY_CLAIM, claimRoute, claimedPairs, claimsAnything, shareOf, type FallbackClaim } from "@proxybroker/sdk/model";

const PROXIES = Array.from({ length: 20 }, (_, i) => `10.3.0.${i + 1}:3128`);
const NOW = 1_700_000_000_000;

const claim: FallbackClaim = {
  version: 7,
  members: ["a", "b", "c"],
  keys: [
    { domainKey: "alone.example", shareKey: "alone.example", whole: true, untilMs: NOW + 60_000 },
    { domainKey: "shared.example", shareKey: "shared.example", whole: false, untilMs: NOW + 60_000 },
    { domainKey: "shop-a.example", shareKey: "#fraud", whole: false, untilMs: NOW + 60_000 },
    { domainKey: "ended.example", shareKey: "ended.example", whole: true, untilMs: NOW },
  ],
};

describe("a fallback claim, as both the worker and the broker read it", () => {
  it("routes each key: every proxy, the share, or nothing (a key it does not name, or one that ended)", () => {
    expect(claimRoute(claim, "alone.example", NOW)).toBe("sole");
    expect(claimRoute(claim, "shared.example", NOW)).toBe("share");
    expect(claimRoute(claim, "shop-a.example", NOW)).toBe("share");
    expect(claimRoute(claim, "ended.example", NOW)).toBe("none");
    expect(claimRoute(claim, "other.example", NOW)).toBe("none");
    expect(claimRoute(claim, "shared.example", NOW + 60_000)).toBe("none");
    expect(claimRoute(EMPTY_CLAIM, "alone.example", NOW)).toBe("none");
  });

  it("names the keys served whole, those served from the share, and the share over the claim's members", () => {
    const pairs = claimedPairs(claim, "b", PROXIES, NOW);
    expect(pairs.whole.map((k) => k.domainKey)).toEqual(["alone.example"]);
    expect(pairs.shared.map((k) => [k.domainKey, k.shareKey])).toEqual([
      ["shared.example", "shared.example"],
      ["shop-a.example", "#fraud"],
    ]);
    expect(pairs.share).toEqual(shareOf(PROXIES, ["a", "b", "c"], "b"));
    expect(pairs.share.length).toBeGreaterThan(0);
    expect(pairs.share.length).toBeLessThan(PROXIES.length);
    // the members' shares are disjoint and cover the pool
    const all = ["a", "b", "c"].flatMap((w) => claimedPairs({ ...claim, members: ["a", "b", "c"] }, w, PROXIES, NOW).share);
    expect(all.sort()).toEqual([...PROXIES].sort());
  });

  it("needs no share when no key is served from it; names nothing once every key ended", () => {
    const wholeOnly: FallbackClaim = { ...claim, keys: claim.keys.slice(0, 1) };
    expect(claimedPairs(wholeOnly, "a", PROXIES, NOW).share).toEqual([]);
    expect(claimsAnything(claim, NOW)).toBe(true);
    expect(claimsAnything(claim, NOW + 60_000)).toBe(false);
    expect(claimsAnything(EMPTY_CLAIM, NOW)).toBe(false);
  });
});
