/**
 * The Redis store when Redis goes away and comes back: calls fail fast with
 * `StoreUnavailableError` (no waiting, no queue of calls replayed later), and the same store
 * instance recovers by itself. Real time here: reconnects take real time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AcquireParams } from "@proxybroker/sdk/model";
import { acq as acquireParams } from "../../../sdk/engine/conformance/harness.js";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { StoreUnavailableError, type LeaseStore } from "@proxybroker/sdk/engine";
import { createRedisClient, RedisStore } from "../../../../src/store/redis/index.js";
import { fakeClock, seededRandom } from "../../../support/fake-clock.js";
import { startRedisServer, type RedisServer } from "../../../support/redis-server.js";

/**
 * Calls fail at once (no connection, no offline queue), not at a command timeout: this client's
 * is 10 s, past HANG_MS, so a call left waiting shows as hanging. The bound is far under both and
 * leaves a loaded machine room; under the default 1 s command timeout it sat at that timeout.
 */
const COMMAND_TIMEOUT_MS = 10_000;
const FAIL_FAST_MS = 2_000;
/** How long Redis stays down: long enough for reconnect attempts to back off. */
const OUTAGE_MS = 2_500;
const RECOVER_WITHIN_MS = 5_000;

let server: RedisServer;
let store: LeaseStore;
const clock = fakeClock();

beforeAll(async () => {
  server = await startRedisServer();
  store = new RedisStore({
    client: createRedisClient({ url: server.url, commandTimeoutMs: COMMAND_TIMEOUT_MS }),
    scoring: DEFAULT_SCORING,
    clock: () => clock.now(),
    random: seededRandom(11),
    prefix: "outage:",
  });
});

afterAll(async () => {
  await store?.close();
  await server?.stop();
});

function acq(workerId: string): AcquireParams {
  return acquireParams({ workerId, adaptive: true });
}

const PROXIES = Array.from({ length: 3 }, (_, i) => ({
  id: `10.3.0.${i}:3128`,
  url: `http://10.3.0.${i}:3128`,
  tier: "datacenter",
  labels: {},
}));

/** A call that has not settled after this long is reported as hanging (the test goes on). */
const HANG_MS = 3_000;

/** How a call ended and how long it took; a hanging call ends as an error after HANG_MS. */
async function timed(call: () => Promise<unknown>): Promise<{ ms: number; error: unknown; value: unknown }> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms`)), HANG_MS);
  });
  try {
    const value = await Promise.race([call(), hang]);
    return { ms: performance.now() - start, error: undefined, value };
  } catch (error) {
    return { ms: performance.now() - start, error, value: undefined };
  } finally {
    clearTimeout(timer);
  }
}

describe("RedisStore outage", () => {
  it("fails fast with StoreUnavailableError while Redis is down, then recovers by itself", async () => {
    await store.addProxies("default", PROXIES);
    const held = await store.acquire(acq("before"));
    expect(held.kind).toBe("granted");
    if (held.kind !== "granted") return;

    await server.stop();

    const single = await timed(() => store.acquire(acq("down-1")));
    expect(single.error, `acquire while down answered ${JSON.stringify(single.value)}`).toBeInstanceOf(StoreUnavailableError);
    expect(single.ms).toBeLessThan(FAIL_FAST_MS);

    // a burst while down: every call fails within the bound, none waits behind the others
    const burst = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => timed(() => store.acquire(acq(`ghost-${i}`)))),
      timed(() => store.renew({ leaseId: held.lease.leaseId, fencingToken: held.lease.fencingToken, ttlMs: 0 })),
      timed(() =>
        store.release({
          leaseId: held.lease.leaseId,
          fencingToken: held.lease.fencingToken,
          outcome: { kind: "PROXY_ERROR", httpStatus: 0, latencyMs: 0, retryAfterMs: 0 },
        }),
      ),
    ]);
    for (const [i, r] of burst.entries()) {
      expect(r.error, `call ${i} answered ${JSON.stringify(r.value)}`).toBeInstanceOf(StoreUnavailableError);
      expect(r.ms, `call ${i}`).toBeLessThan(FAIL_FAST_MS);
    }

    const ping = await timed(() => store.ping());
    expect(ping.error).toBeUndefined();
    expect(ping.value).toBe(false);
    expect(ping.ms).toBeLessThan(FAIL_FAST_MS);

    // a longer outage: calls keep failing fast while the client's reconnect attempts back off
    const downUntil = performance.now() + OUTAGE_MS;
    for (let i = 0; performance.now() < downUntil; i++) {
      const r = await timed(() => store.acquire(acq(`ghost-late-${i}`)));
      expect(r.error, `late call ${i}`).toBeInstanceOf(StoreUnavailableError);
      expect(r.ms, `late call ${i}`).toBeLessThan(FAIL_FAST_MS);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    await server.restart(); // empty: the test server keeps nothing
    const restartedAt = performance.now();
    let recovered = false;
    while (!recovered && performance.now() - restartedAt < RECOVER_WITHIN_MS) {
      recovered = (await timed(() => store.ping())).value === true;
      if (!recovered) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(recovered, `ping() not true within ${RECOVER_WITHIN_MS} ms of the restart`).toBe(true);

    await store.addProxies("default", PROXIES);
    const after = await store.acquire(acq("after"));
    expect(after.kind).toBe("granted");
    // calls that failed while Redis was down were not queued and replayed after the reconnect
    await new Promise((resolve) => setTimeout(resolve, 300));
    const workers = (await store.liveWorkers("default", 0)).map((w) => w.workerId);
    expect(workers).toEqual(["after"]);
  });
});
