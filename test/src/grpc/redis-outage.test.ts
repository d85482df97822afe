import { beforeAll, describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import type { ServiceError } from "@grpc/grpc-js";
import { durationFromMs, durationMs } from "@bufbuild/protobuf/wkt";
import { DenyReason } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { withBroker } from "../../support/with-broker.js";
import { withRedis } from "../../support/with-redis.js";
import { StreamClient } from "../../support/stream-client.js";

/**
 * Redis stopped under a running broker → UNAVAILABLE fast, health NOT_SERVING; back empty (no
 * persistence) → the broker notices the loss, holds grants for the longest lease TTL, then
 * recovers with fencing tokens still increasing.
 */
describe("Redis outage through the broker", () => {
  const redis = withRedis();
  // A broker whose Redis commands time out only after 10 s: its answers while Redis is down come
  // at once (no connection, no offline queue), and a bound far under that timeout tells them apart
  // from answers that waited for it, with room for a loaded machine.
  const b = withBroker({ kind: "redis", redis, settings: { ttlDefaultMs: 600 }, redisCommandTimeoutMs: 10_000 });
  const FAIL_FAST_MS = 2_500;

  beforeAll(async () => {
    await b.admin.addProxies({ proxies: [{ url: "10.3.0.1:8080" }] });
  });

  it("answers UNAVAILABLE at once while Redis is down and recovers by itself, its policies set again", async () => {
    await b.admin.setDomainPolicy({ policy: { pattern: "*.paced.example", minInterval: durationFromMs(300) } });
    const s = new StreamClient(b.broker);
    const before = await s.acquire({ domain: "a.example" });
    if (before.case !== "granted") throw new Error(`expected a grant, got ${String(before.case)}`);
    await redis.server().stop();

    const t0 = Date.now();
    const err = await b.broker.acquireLease({ domain: "a.example" }).then(
      () => undefined,
      (e: ServiceError) => e,
    );
    expect(err?.code).toBe(status.UNAVAILABLE);
    expect(Date.now() - t0).toBeLessThan(FAIL_FAST_MS);

    // In-band on the stream, which stays open; many requests do not pile up.
    const t1 = Date.now();
    const answers = await Promise.all(Array.from({ length: 20 }, () => s.acquire({ domain: "a.example" })));
    expect(Date.now() - t1).toBeLessThan(FAIL_FAST_MS);
    for (const a of answers) {
      expect(a.case).toBe("denied");
      if (a.case === "denied") expect(a.value.reason).toBe(DenyReason.UNAVAILABLE);
    }
    await expect.poll(async () => (await b.health.check({ service: "" })).status, { timeout: 3_000 }).toBe(2); // NOT_SERVING

    await redis.server().restart();
    // The restarted Redis is empty (no persistence): the pool is loaded again once it answers.
    await expect
      .poll(
        async () =>
          b.admin.addProxies({ proxies: [{ url: "10.3.0.1:8080" }] }).then(
            () => true,
            () => false,
          ),
        { timeout: 8_000, interval: 100 },
      )
      .toBe(true);
    // The lease granted before may still be in use: nothing is granted for the longest TTL (600 ms).
    const held = await s.acquire({ domain: "a.example" });
    expect(held.case).toBe("denied");
    const heldAt = Date.now();
    const after = await s.acquire({ domain: "a.example", maxWaitMs: 3_000 });
    if (after.case !== "granted") throw new Error(`expected a grant after the hold, got ${String(after.case)}`);
    expect(Date.now() - heldAt).toBeGreaterThan(200);
    expect(after.value.lease!.fencingToken).toBeGreaterThan(before.value.lease!.fencingToken);
    // The policies went with Redis's data: the broker set again the ones it knew.
    const policies = (await b.admin.listDomainPolicies({})).policies.map((p) => [p.pattern, p.minInterval && durationMs(p.minInterval)]);
    expect(policies).toEqual([["*.paced.example", 300]]);
    await expect.poll(async () => (await b.health.check({ service: "" })).status, { timeout: 3_000 }).toBe(1); // SERVING
  });
});
