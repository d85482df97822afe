/** Pure logic of sharded pools: shard names, the proxy → shard hash, rendezvous order, POOL_SHARDS. */
import { describe, expect, it } from "vitest";
import { parseShardCounts } from "../../../../src/config/shard-counts.js";
import { hash32, ShardMap } from "../../../../src/store/sharded/shard-map.js";

describe("ShardMap", () => {
  const map = new ShardMap({ all: 1, byPool: { big: 4 } });

  it("names shard 0 as the pool itself and shard i as <pool>~i, and parses them back", () => {
    expect(map.count("big")).toBe(4);
    expect(map.count("small")).toBe(1);
    expect(map.names("big")).toEqual(["big", "big~1", "big~2", "big~3"]);
    expect(map.parse("big~3")).toEqual({ pool: "big", shard: 3 });
    expect(map.parse("big")).toEqual({ pool: "big", shard: 0 });
    expect(map.any()).toBe(true);
    expect(new ShardMap({ all: 1, byPool: {} }).any()).toBe(false);
  });

  it("hashes ids the same way on every broker (the stored layout depends on it)", () => {
    // FNV-1a then murmur3's finalizer, pinned (computed independently): a change of the hash would
    // move stored proxies to other shards
    expect(hash32("10.0.0.1:3128")).toBe(624545246);
    expect(map.shardOf("big", "10.0.0.1:3128")).toBe(624545246 % 4);
  });

  it("places every username of one endpoint on the shard of its host:port (a legacy id's shard)", () => {
    const big = new ShardMap({ all: 16, byPool: {} });
    const endpoint = "gw.example:7777";
    const users = Array.from({ length: 50 }, (_, i) => `cust-s${i}-country-us@${endpoint}`);
    for (const id of users) expect(big.shardOf("big", id)).toBe(hash32(endpoint) % 16);
    // not all one shard by accident: the endpoints of the ids do spread
    expect(new Set(users.map((_, i) => big.shardOf("big", `gw${i}.example:7777`))).size).toBeGreaterThan(1);
  });

  it("spreads proxies evenly over the shards", () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 40_000; i++) counts[map.shardOf("big", `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:3128`)]! += 1;
    for (const c of counts) expect(Math.abs(c - 10_000)).toBeLessThan(500);
  });

  it("orders the shards per key: a permutation, the same every time, each shard first for about as many keys", () => {
    const first = [0, 0, 0, 0];
    for (let i = 0; i < 8_000; i++) {
      const order = map.order("big", `site-${i}.example`);
      expect([...order].sort()).toEqual([0, 1, 2, 3]);
      expect(map.order("big", `site-${i}.example`)).toEqual(order);
      first[order[0]!]! += 1;
    }
    for (const c of first) expect(Math.abs(c - 2_000)).toBeLessThan(200);
  });

  it("groups items by their proxy's shard", () => {
    const ids = Array.from({ length: 50 }, (_, i) => `10.0.0.${i}:80`);
    const groups = map.group("big", ids, (id) => id);
    expect([...groups.values()].flat().sort()).toEqual([...ids].sort());
    for (const [s, part] of groups) for (const id of part) expect(map.shardOf("big", id)).toBe(s);
  });
});

describe("parseShardCounts (POOL_SHARDS)", () => {
  it("reads a count for every pool, counts per pool, or both", () => {
    expect(parseShardCounts("")).toEqual({ all: 1, byPool: {} });
    expect(parseShardCounts("4")).toEqual({ all: 4, byPool: {} });
    expect(parseShardCounts("big=8, huge=16")).toEqual({ all: 1, byPool: { big: 8, huge: 16 } });
    expect(parseShardCounts("2,big=8")).toEqual({ all: 2, byPool: { big: 8 } });
  });

  it("refuses what is not a count from 1 to 64", () => {
    for (const bad of ["0", "65", "x", "big=", "big=0", "b~1=2", "-3", "1.5"]) expect(() => parseShardCounts(bad), bad).toThrow(RangeError);
  });
});
