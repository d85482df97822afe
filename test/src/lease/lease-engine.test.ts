/**
 * The broker's lease engine above a real in-memory store: what waiting acquires may and may not
 * hold up.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "@proxybroker/sdk/engine";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { LeaseEngine } from "../../../src/lease/lease-engine.js";
import type { LeaseEngineOptions } from "../../../src/lease/lease-engine.js";
import type { AcquireSpec } from "../../../src/lease/specs.js";

function spec(over: Partial<AcquireSpec>): AcquireSpec {
  return {
    requestId: "",
    workerId: "w1",
    pool: "default",
    host: "shop.example",
    ttlMs: 30_000,
    maxWaitMs: 0,
    sessionKey: "",
    tier: "",
    labels: {},
    proxyId: "",
    fallbackPool: true,
    ...over,
  };
}

/** An engine on a real in-memory store with two proxies, no pacing, polling waiters every 20 ms. */
async function twoProxies(over: Partial<LeaseEngineOptions> = {}): Promise<{ store: MemoryStore; engine: LeaseEngine }> {
  const store = new MemoryStore({ scoring: DEFAULT_SCORING });
  const engine = new LeaseEngine({
    store,
    defaults: { maxConcurrency: 1, minIntervalMs: 0, defaultTtlMs: 30_000, banTtlMs: 3_600_000, maxIntervalMs: 60_000 },
    sessionTtlMs: 600_000,
    waitPollMs: 20,
    ttlMaxMs: 3_600_000,
    ...over,
  });
  await store.addProxies("default", [
    { id: "10.0.0.1:1", url: "http://10.0.0.1:1", tier: "", labels: {} },
    { id: "10.0.0.2:1", url: "http://10.0.0.2:1", tier: "", labels: {} },
  ]);
  return { store, engine };
}

/** Release a granted lease with a success (nothing for a denial). */
async function releaseOk(engine: LeaseEngine, result: Awaited<ReturnType<LeaseEngine["acquire"]>>): Promise<void> {
  if (result.kind !== "granted") return;
  await engine.release({
    leaseId: result.lease.leaseId,
    fencingToken: result.lease.fencingToken,
    outcome: { kind: "SUCCESS", httpStatus: 200, latencyMs: 1, retryAfterMs: 0 },
  });
}

describe("LeaseEngine", () => {
  it("an acquire of one proxy by id (a fallback hand-over) is not held up by plain waiters the proxy is not for", async () => {
    const { store, engine } = await twoProxies();
    // 10.0.0.1:1 is the share of w3, which worked from its fallback pool while the broker was away
    await store.reserve("default", { proxies: { "10.0.0.1:1": "w3" }, domains: {} });
    const first = await engine.acquire(spec({}));
    expect(first.kind === "granted" && first.lease.proxy.id).toBe("10.0.0.2:1");
    // w1 waits: the free proxy is reserved for w3
    const waiting = engine.acquire(spec({ maxWaitMs: 2_000 }));
    await new Promise((r) => setTimeout(r, 50));
    // w3 comes back and hands its fallback lease (or its pacing) over: that very proxy, no wait
    const handOver = await engine.acquire(spec({ workerId: "w3", proxyId: "10.0.0.1:1" }));
    expect(handOver.kind).toBe("granted");
    // a plain max_wait 0 acquire still does not overtake the waiter
    expect((await engine.acquire(spec({ workerId: "w2" }))).kind).toBe("denied");
    await releaseOk(engine, first);
    expect((await waiting).kind).toBe("granted");
  });

  it("a worker whose proxies are all reserved for another does not hold up that worker's acquires", async () => {
    // what the reservations say: the pool's proxies are reserved for w3 (silent a moment ago)
    const { store, engine } = await twoProxies({ reservedFromOthers: (_pool, workerId) => workerId !== "w3" });
    await store.reserve("default", { proxies: { "10.0.0.1:1": "w3", "10.0.0.2:1": "w3" }, domains: {} });
    // w1 waits at the head of the line: nothing can serve it until the reservations lift
    const blocked = engine.acquire(spec({ maxWaitMs: 1_000 }));
    await new Promise((r) => setTimeout(r, 30));
    // w3 is served at once, and its own waiters too, though w1 came first
    const a = await engine.acquire(spec({ workerId: "w3" }));
    const b = await engine.acquire(spec({ workerId: "w3" }));
    expect(a.kind === "granted" && b.kind === "granted").toBe(true);
    const waiting = engine.acquire(spec({ workerId: "w3", maxWaitMs: 1_000 }));
    await new Promise((r) => setTimeout(r, 30));
    await releaseOk(engine, a);
    expect((await waiting).kind).toBe("granted");
    expect((await blocked).kind).toBe("denied");
  });
});
