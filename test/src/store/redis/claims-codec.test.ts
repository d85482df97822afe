import { describe, expect, it } from "vitest";
import type { FallbackClaim } from "@proxybroker/sdk/model";
import { decodeClaims, encodeClaims } from "../../../../src/store/redis/claims-codec.js";

const claim = (version: number): FallbackClaim => ({
  version,
  members: ["a", "b\t?"],
  keys: [
    { domainKey: "x.example", shareKey: "#g", whole: true, untilMs: 1_700_000_060_000 },
    { domainKey: "y.example", shareKey: "y.example", whole: false, untilMs: 1_700_000_061_000 },
  ],
});

describe("the Redis store's claims record", () => {
  it("keeps the latest claim and the one before, readable back as they were (a tab in a member is escaped)", () => {
    const raw = encodeClaims([claim(1_700_000_000_000_001), claim(2)]);
    expect(raw.split("\t")[0]).toBe("1700000000000001");
    expect(raw.split("\t")).toHaveLength(3);
    expect(decodeClaims(raw)).toEqual([claim(1_700_000_000_000_001), claim(2)]);
    expect(decodeClaims(encodeClaims([claim(3)]))).toEqual([claim(3)]);
  });

  it("reads nothing from nothing, or from a malformed record", () => {
    expect(encodeClaims([])).toBe("");
    expect(decodeClaims("")).toEqual([]);
    expect(decodeClaims(null)).toEqual([]);
    expect(decodeClaims("5\t{not json")).toEqual([]);
    expect(decodeClaims('5\t{"v":5,"m":"no list","k":[]}')).toEqual([]);
  });
});
