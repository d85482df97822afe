import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { RedisStore } from "../../src/store/redis/index.js";
import { createRedisClient } from "../../src/store/redis/client.js";
import { fakeClock, seededRandom } from "../support/fake-clock.js";
import { withRedis } from "../support/with-redis.js";
import { acq, denied, granted, outcome } from "../sdk/engine/conformance/harness.js";

const redis = withRedis();

describe("G9 smoke (redis)", () => {
  it("siblings exclude, pace, ban; awaiting", async () => {
    const clock = fakeClock(1_000_000);
    const store = new RedisStore({
      client: createRedisClient({ url: redis.url() }),
      scoring: DEFAULT_SCORING,
      clock: clock.now,
      random: seededRandom(1),
      prefix: `g9-${randomBytes(4).toString("hex")}:`,
    });
    const ids = ["a@gw:7777", "b@gw:7777", "c@gw:7777"];
    await store.addProxies(
      "default",
      ids.map((id) => ({ id, url: `http://${id}`, tier: "", labels: {} })),
    );
    // awaiting: shared host, unknown exit, grantUnknownExits false
    expect(denied(await store.acquire(acq({ workerId: "w", tier: "", grantUnknownExits: false })))).toBeLessThan(0);
    for (const id of ids) await store.recordHealth("default", id, "pass", 0, id === "c@gw:7777" ? "198.51.100.2" : "198.51.100.1");
    const list = await store.listProxies("default", { size: 10, after: "" });
    expect(list.proxies.map((p) => p.exitIp)).toEqual(["198.51.100.1", "198.51.100.1", "198.51.100.2"]);
    const p = acq({ workerId: "w", tier: "", grantUnknownExits: false, minIntervalMs: 1000 });
    const l1 = granted(await store.acquire(p));
    const l2 = granted(await store.acquire(p));
    expect(new Set([l1.proxy.exitIp, l2.proxy.exitIp]).size).toBe(2);
    const d = denied(await store.acquire(p));
    console.log("denied retry", d);
    await store.release({ leaseId: l1.leaseId, fencingToken: l1.fencingToken, outcome: outcome("SUCCESS") });
    expect(denied(await store.acquire(p))).toBeGreaterThan(0);
    clock.advance(1001);
    const l3 = granted(await store.acquire(p));
    expect(l3.proxy.exitIp).toBe(l1.proxy.exitIp);
    await store.release({ leaseId: l3.leaseId, fencingToken: l3.fencingToken, outcome: outcome("BLOCKED") });
    clock.advance(5000);
    expect(denied(await store.acquire(p))).toBeGreaterThan(0);
    granted(await store.acquire({ ...p, domainKey: "other.example.com" }));
    await store.close();
  });
});
