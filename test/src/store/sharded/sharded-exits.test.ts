/**
 * G9 across shards (src/store/sharded/shard-exits.ts): proxies of one exit on different shards are
 * never granted one domain-key at once — the lowest shard's keep the exit, the others are marked.
 */
import { describe, expect, it } from "vitest";
import { ShardMap } from "../../../../src/store/sharded/shard-map.js";
import { openShards } from "../../../support/sharded-store.js";
import { withRedis } from "../../../support/with-redis.js";
import { acq } from "../../../sdk/engine/conformance/harness.js";

const redis = withRedis();
const SHARDS = new ShardMap({ all: 3, byPool: {} });
const EXIT = "203.0.113.9";

/** Ports of one host on two different shards, the lower shard's first. */
function portsOnTwoShards(): [string, string] {
  const byShard = new Map<number, string>();
  for (let port = 7000; byShard.size < 3; port++) {
    const id = `gw.example:${port}`;
    const s = SHARDS.shardOf("default", id);
    if (!byShard.has(s)) byShard.set(s, id);
  }
  return [byShard.get(0) ?? "", byShard.get(2) ?? ""];
}

describe("exit IPs across the shards of a pool", () => {
  it("grants the exit through the lowest shard's proxy only, and lifts the mark when the exit moved", async () => {
    const { store, clock } = openShards(redis);
    const [low, high] = portsOnTwoShards();
    await store.addProxies(
      "default",
      [low, high].map((id) => ({ id, url: `http://${id}`, tier: "", labels: {} })),
    );
    // shown in either order, at once: the higher shard's proxy is never granted
    await Promise.all([store.recordHealth("default", high, "pass", 0, EXIT), store.recordHealth("default", low, "pass", 0, EXIT)]);
    const lease = await store.acquire(acq({ proxyId: low }));
    expect(lease.kind).toBe("granted");
    expect(await store.acquire(acq({ proxyId: high, domainKey: "other.example" }))).toEqual({ kind: "denied", retryAfterMs: -1 });
    expect((await store.acquire(acq({ domainKey: "third.example" }))).kind === "granted").toBe(true);
    expect(await store.acquire(acq({ domainKey: "third.example" }))).toMatchObject({ kind: "denied" });
    // the lower one leaves the exit, which it still counts for an hour (its leases may run)…
    await store.recordHealth("default", low, "pass", 0, "203.0.113.10");
    await store.recordHealth("default", high, "pass", 0, EXIT);
    expect(await store.acquire(acq({ proxyId: high, domainKey: "other.example" }))).toEqual({ kind: "denied", retryAfterMs: -1 });
    // …then the higher one's next check lifts its mark
    clock.advance(3_600_001);
    await store.recordHealth("default", high, "pass", 0, EXIT);
    expect((await store.acquire(acq({ proxyId: high, domainKey: "other.example" }))).kind).toBe("granted");
  });

  it("ports of one host on two shards both wait for their first probe, as on one shard", async () => {
    const { store } = openShards(redis);
    const [low, high] = portsOnTwoShards();
    await store.addProxies("default", [{ id: low, url: `http://${low}`, tier: "", labels: {} }]);
    const strict = (proxyId: string) => acq({ proxyId, grantUnknownExits: false });
    // alone on its host: granted before any probe
    const alone = await store.acquire(strict(low));
    expect(alone.kind).toBe("granted");
    await store.addProxies("default", [{ id: high, url: `http://${high}`, tier: "", labels: {} }]);
    expect(await store.acquire(strict(high))).toEqual({ kind: "denied", retryAfterMs: -1 });
    expect(await store.acquire({ ...strict(low), domainKey: "other.example" })).toEqual({ kind: "denied", retryAfterMs: -1 });
    await store.recordHealth("default", high, "pass", 0, "");
    expect((await store.acquire(strict(high))).kind).toBe("granted");
  });
});
