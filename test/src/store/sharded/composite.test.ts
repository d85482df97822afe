/** Pure logic: a sharded pool's epoch, policy version and event cursor, made of every shard's. */
import { describe, expect, it } from "vitest";
import { joinCursors, joinEpochs, joinVersions, splitCursor, splitEpoch, splitVersion } from "../../../../src/store/sharded/composite.js";

describe("composite values of a sharded pool", () => {
  it("an epoch is every shard's, or none while one shard has none", () => {
    expect(joinEpochs(["1", "2", "3"])).toBe("1+2+3");
    expect(joinEpochs(["1", "", "3"])).toBe("");
    expect(splitEpoch("1+2+3", 3)).toEqual(["1", "2", "3"]);
    expect(splitEpoch("", 3)).toEqual(["", "", ""]);
    // another shape (another shard count): an epoch no shard has
    expect(splitEpoch("1+2", 3)).toEqual(["?", "?", "?"]);
  });

  it("a version carries the epochs and the policy counter, once when the shards agree", () => {
    expect(joinVersions([".0", ".0", ".0"])).toBe(".0");
    expect(joinVersions(["1.4", "2.4", "3.4"])).toBe("1+2+3.4");
    expect(joinVersions(["1.4", "2.0", "3.4"])).toBe("1+2+3.4+0+4");
    for (const v of [
      ["1.4", "2.4", "3.4"],
      ["1.4", "2.0", "3.4"],
      [".0", ".0", ".0"],
    ])
      expect(splitVersion(joinVersions(v), 3)).toEqual(v);
    // a shard without an epoch: the pool has none, and every shard gets a version without one
    expect(joinVersions(["1.4", ".0", "3.4"])).toBe(".4+0+4");
    expect(splitVersion(".4+0+4", 3)).toEqual([".4", ".0", ".4"]);
    expect(splitVersion("garbage", 3)).toEqual(["?.?", "?.?", "?.?"]);
    expect(splitVersion("1+2.4", 3)).toEqual(["?.4", "?.4", "?.4"]);
  });

  it("a cursor is every shard's; the oldest and the newest are the same for all", () => {
    expect(splitCursor(joinCursors(["1-0", "2-5", "0-0"]), 3)).toEqual(["1-0", "2-5", "0-0"]);
    expect(splitCursor("", 2)).toEqual(["", ""]);
    expect(splitCursor("$", 2)).toEqual(["$", "$"]);
    expect(splitCursor("1-0", 2)).toEqual(["$", "$"]);
  });
});
