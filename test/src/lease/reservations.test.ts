import { describe, expect, it } from "vitest";
import { MemoryStore, type LeaseStore } from "@proxybroker/sdk/engine";
import { DEFAULT_SCORING, shareOf } from "@proxybroker/sdk/model";
import type { DomainUse } from "@proxybroker/sdk/model";
import { LIFT_AFTER_MS, Reservations } from "../../../src/lease/reservations.js";
import { fakeClock } from "../../support/fake-clock.js";
import { createRedisClient, RedisStore } from "../../../src/store/redis/index.js";
import { redisForFile } from "../../support/redis-for-file.js";
import type { FakeClock } from "../../support/fake-clock.js";
import { acq } from "../../sdk/engine/conformance/harness.js";

const PROXIES = Array.from({ length: 12 }, (_, i) => `10.8.0.${i + 1}:3128`);
const ABSENT_MS = 8_000;

function acquire(workerId: string, proxyId = "") {
  return acq({ workerId, proxyId });
}

const redis = redisForFile();

/** A broker's reservations (as if it started now) on `store`; `uses`: the domain-keys workers used. */
function reservationsOn(store: LeaseStore, clock: FakeClock, uses?: (pool: string) => Promise<readonly DomainUse[]>): Reservations {
  return new Reservations({
    store,
    pools: () => ["default"],
    clock: () => clock.now(),
    absentAfterMs: ABSENT_MS,
    fallbackWindowMs: 600_000,
    liveWindowMs: 60_000,
    intervalMs: 1_000,
    ...(uses === undefined ? {} : { domainUses: uses, domainUseMs: 60_000 }),
  });
}

/** Reservations on a real (in-memory) store with a manual clock: no sleeping. */
async function setup() {
  const clock = fakeClock();
  const store = new MemoryStore({ scoring: DEFAULT_SCORING, clock: () => clock.now() });
  await store.addProxies(
    "default",
    PROXIES.map((id) => ({ id, url: `http://${id}`, tier: "", labels: {} })),
  );
  return { clock, store, reservations: reservationsOn(store, clock) };
}

describe("Reservations", () => {
  it("reserve a silent worker's share for it, keep it a while after it is back, then lift it", async () => {
    const { clock, store, reservations } = await setup();
    clock.advance(10); // both workers are seen after the broker started
    await store.touchWorker("default", "a");
    await store.touchWorker("default", "b");
    const shareOfA = shareOf(PROXIES, ["a", "b"], "a");
    expect(shareOfA.length).toBeGreaterThan(1);
    const [ownId, otherId] = shareOfA as [string, string];

    // b keeps acquiring; a goes silent
    clock.advance(ABSENT_MS + 1);
    await store.touchWorker("default", "b");
    await reservations.tick();
    const got = new Set<string>();
    for (let i = 0; i < PROXIES.length; i++) {
      const r = await store.acquire(acquire("b"));
      if (r.kind === "granted") got.add(r.lease.proxy.id);
    }
    // b got every proxy but a's share
    expect([...got].sort()).toEqual(PROXIES.filter((p) => !shareOfA.includes(p)).sort());
    // a, back, gets its own (the hand-over of its fallback leases)
    expect((await store.acquire(acquire("a", ownId))).kind).toBe("granted");

    // a was seen again: its share stays reserved for LIFT_AFTER_MS after the broker noticed
    await reservations.tick();
    expect((await store.acquire(acquire("b", otherId))).kind).toBe("denied");
    clock.advance(LIFT_AFTER_MS - 1);
    await store.touchWorker("default", "a");
    await reservations.tick();
    expect((await store.acquire(acquire("b", otherId))).kind).toBe("denied");
    clock.advance(2);
    await store.touchWorker("default", "a");
    await reservations.tick();
    for (const id of shareOfA.slice(1)) expect((await store.acquire(acquire("b", id))).kind).toBe("granted");
  });

  it("reserve a silent worker's share only for the domain-keys it is listed with", async () => {
    const { clock, store } = await setup();
    const reservations = reservationsOn(store, clock, (pool) => store.domainUses(pool, clock.now() - 60_000));
    clock.advance(10);
    // a and b both lease for shop.example.com (so neither is alone on it); b also for other.example
    for (const w of ["a", "b"])
      expect((await store.acquire(acq({ workerId: w, fallbackPool: true, domainUseMs: 60_000 }))).kind).toBe("granted");
    await store.touchWorker("default", "a");
    const shareOfA = shareOf(PROXIES, ["a", "b"], "a");
    clock.advance(ABSENT_MS + 1);
    await store.touchWorker("default", "b");
    await reservations.tick();
    const grantedTo = async (domainKey: string) => {
      const got: string[] = [];
      for (let i = 0; i < PROXIES.length; i++) {
        const r = await store.acquire(acq({ workerId: "b", domainKey, fallbackPool: true, domainUseMs: 60_000 }));
        if (r.kind === "granted") got.push(r.lease.proxy.id);
      }
      return got.sort();
    };
    const shop = await grantedTo("shop.example.com");
    for (const id of shareOfA) expect(shop).not.toContain(id);
    // other.example: a may not use it in fallback, so nothing of it is reserved for a
    expect(await grantedTo("other.example")).toEqual([...PROXIES].sort());
  });

  it("write the reservations again when a silent worker's listed domain-keys change, not only when the silent workers do", async () => {
    const { clock, store } = await setup();
    let uses: DomainUse[] = [];
    const reservations = reservationsOn(store, clock, async () => uses);
    clock.advance(10);
    await store.touchWorker("default", "a");
    await store.touchWorker("default", "b");
    clock.advance(ABSENT_MS + 1);
    await store.touchWorker("default", "b");
    // a is silent, but the read of the uses did not show its domain-key yet: nothing of it reserved
    await reservations.tick();
    expect((await store.acquire(acq({ workerId: "b", domainKey: "late.example", proxyId: PROXIES[0]! }))).kind).toBe("granted");
    // the next read shows it (alone on it): reserved whole at the next pass, not 30 s later
    uses = [{ workerId: "a", domainKey: "late.example", firstUsedAt: clock.now() - 20_000, lastUsedAt: clock.now() - ABSENT_MS }];
    clock.advance(1_000);
    await reservations.tick();
    expect((await store.acquire(acq({ workerId: "b", domainKey: "late.example", proxyId: PROXIES[1]! }))).kind).toBe("denied");
  });

  it("count every worker seen before a restarted broker started as silent", async () => {
    const { clock, store } = await setup();
    await store.touchWorker("default", "a");
    clock.advance(1_000);
    const restarted = reservationsOn(store, clock);
    const seen = await store.liveWorkers("default", 0);
    expect(restarted.silent(seen, clock.now()).map((w) => w.workerId)).toEqual(["a"]);
    await restarted.tick();
    const r = await store.acquire(acquire("b"));
    expect(r.kind).toBe("denied"); // a alone was live: its share is the whole pool
  });

  it("reserve nothing for a worker that left (LeavePool), while one that vanished keeps its share", async () => {
    const { clock, store, reservations } = await setup();
    clock.advance(10);
    await store.touchWorker("default", "left");
    await store.touchWorker("default", "vanished");
    await store.touchWorker("default", "stays");
    const shareOfLeft = shareOf(PROXIES, ["left", "stays", "vanished"], "left");
    const shareOfVanished = shareOf(PROXIES, ["left", "stays", "vanished"], "vanished");
    expect(shareOfLeft.length).toBeGreaterThan(0);
    expect(shareOfVanished.length).toBeGreaterThan(0);
    expect(await store.forgetWorker("default", "left")).toBe(true);
    clock.advance(ABSENT_MS + 1);
    await store.touchWorker("default", "stays");
    await reservations.tick();
    const got = new Set<string>();
    for (let i = 0; i < PROXIES.length; i++) {
      const r = await store.acquire(acquire("stays"));
      if (r.kind === "granted") got.add(r.lease.proxy.id);
    }
    // everything but the vanished worker's share, over the workers still live (a superset of the
    // share it computed while three were: rendezvous shares only grow when a member goes)
    const reserved = shareOf(PROXIES, ["stays", "vanished"], "vanished");
    for (const id of shareOfVanished) expect(reserved).toContain(id);
    expect([...got].sort()).toEqual(PROXIES.filter((p) => !reserved.includes(p)).sort());
    // and some of what was the leaving worker's share went to the one that stays
    expect(shareOfLeft.some((id) => got.has(id))).toBe(true);
  });
});

describe("Reservations after the store lost its state", () => {
  it("put back the workers seen before a wipe: a silent worker's share stays reserved, for every replica, until it is back", async () => {
    const clock = fakeClock();
    const store = new RedisStore({ client: createRedisClient({ url: redis.url() }), scoring: DEFAULT_SCORING, clock: () => clock.now() });
    const specs = PROXIES.map((id) => ({ id, url: `http://${id}`, tier: "", labels: {} }));
    try {
      await store.addProxies("default", specs);
      const reservations = reservationsOn(store, clock);
      clock.advance(10);
      await store.touchWorker("default", "a"); // a keeps a fallback pool
      await store.touchWorker("default", "b");
      const shareOfA = shareOf(PROXIES, ["a", "b"], "a");
      // a goes silent (it may be leasing from its fallback pool); b goes on
      clock.advance(ABSENT_MS + 1);
      await store.touchWorker("default", "b");
      await reservations.tick();
      expect((await store.acquire(acquire("b", shareOfA[0]))).kind).toBe("denied");
      // the store loses everything: the workers, their fallback marks, the reservations
      await redis.admin().flushall();
      await store.addProxies("default", specs);
      await store.touchWorker("default", "b");
      await reservations.lost("default");
      for (const id of shareOfA) expect((await store.acquire(acquire("b", id))).kind, id).toBe("denied");
      expect(
        (
          await store.acquire(
            acquire(
              "b",
              PROXIES.find((p) => !shareOfA.includes(p)),
            ),
          )
        ).kind,
      ).toBe("granted");
      // and stays so while a is silent, however long past the loss (up to the fallback window),
      // also for a replica that started after the loss and never saw a itself
      clock.advance(LIFT_AFTER_MS * 3);
      await store.touchWorker("default", "b");
      await reservations.tick();
      for (const id of shareOfA) expect((await store.acquire(acquire("b", id))).kind, id).toBe("denied");
      const replica = reservationsOn(store, clock);
      await replica.tick();
      for (const id of shareOfA) expect((await store.acquire(acquire("b", id))).kind, id).toBe("denied");
      // a is back: the store sees it again, and its share is lifted LIFT_AFTER_MS after that
      await store.touchWorker("default", "a");
      await reservations.tick();
      clock.advance(LIFT_AFTER_MS + 1);
      await store.touchWorker("default", "a");
      await reservations.tick();
      for (const id of shareOfA.slice(1)) expect((await store.acquire(acquire("b", id))).kind, id).toBe("granted");
    } finally {
      await store.close();
    }
  });
});
