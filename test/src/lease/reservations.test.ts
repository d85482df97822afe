import { describe, expect, it } from "vitest";
import { MemoryStore, type LeaseStore } from "@proxybroker/sdk/engine";
import { DEFAULT_SCORING, shareOf, shareOfGroups } from "@proxybroker/sdk/model";
import type { FallbackClaim, Reservations as ReservationMap } from "@proxybroker/sdk/model";
import { LIFT_AFTER_MS, Reservations } from "../../../src/lease/reservations.js";
import { fakeClock } from "../../support/fake-clock.js";
import { createRedisClient, RedisStore } from "../../../src/store/redis/index.js";
import { withRedis } from "../../support/with-redis.js";
import type { FakeClock } from "../../support/fake-clock.js";
import { acq } from "../../sdk/engine/conformance/harness.js";

const PROXIES = Array.from({ length: 12 }, (_, i) => `10.8.0.${i + 1}:3128`);
const ABSENT_MS = 3_000;
const SHOP = "shop.example.com";

function acquire(workerId: string, proxyId = "", domainKey = SHOP) {
  return acq({ workerId, proxyId, domainKey });
}

const redis = withRedis();

/** A claim of `keys` (each served from the share, or `whole`), over `members`, until an hour from `now`. */
function claim(version: number, members: readonly string[], keys: Record<string, "share" | "whole">, now: number): FallbackClaim {
  return {
    version,
    members: [...members].sort(),
    keys: Object.entries(keys).map(([domainKey, how]) => ({
      domainKey,
      shareKey: domainKey,
      whole: how === "whole",
      untilMs: now + 3_600_000,
    })),
  };
}

/** A broker's reservations (as if it started now) on `store`; every write is kept in `written`. */
function reservationsOn(store: LeaseStore, clock: FakeClock, written: ReservationMap[] = []): Reservations {
  return new Reservations({
    store,
    pools: () => ["default"],
    clock: () => clock.now(),
    absentAfterMs: ABSENT_MS,
    fallbackWindowMs: 600_000,
    intervalMs: 500,
    onReserved: (_pool, _summary, reserved) => written.push(reserved),
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
  const written: ReservationMap[] = [];
  return { clock, store, written, reservations: reservationsOn(store, clock, written) };
}

/** The i-th proxy of worker a's share among a and b. */
function shareOfA(i: number): string {
  const id = shareOf(PROXIES, ["a", "b"], "a")[i];
  if (id === undefined) throw new Error(`a's share has no proxy ${i}`);
  return id;
}

/** The proxies `workerId` is granted for `domainKey`, one acquire after another (each lease kept). */
async function grantedTo(store: LeaseStore, workerId: string, domainKey = SHOP): Promise<string[]> {
  const got: string[] = [];
  for (let i = 0; i < PROXIES.length; i++) {
    const r = await store.acquire(acquire(workerId, "", domainKey));
    if (r.kind === "granted") got.push(r.lease.proxy.id);
  }
  return got.sort();
}

describe("Reservations of silent workers' claims", () => {
  it("reserve what a silent worker's claim names, keep it a while after the worker is heard again, then lift it", async () => {
    const { clock, store, reservations } = await setup();
    clock.advance(10); // both workers are heard after the broker started
    await store.hearWorker("default", "a", { heardAt: clock.now(), claim: claim(1, ["a", "b"], { [SHOP]: "share" }, clock.now()) });
    await store.hearWorker("default", "b", { heardAt: clock.now() });
    const shareOfA = shareOf(PROXIES, ["a", "b"], "a");
    expect(shareOfA.length).toBeGreaterThan(1);
    const [ownId, otherId] = shareOfA as [string, string];

    // heard within WORKER_ABSENT_AFTER_MS: nothing reserved
    clock.advance(ABSENT_MS - 1);
    await reservations.tick();
    expect((await store.acquire(acquire("b", otherId))).kind).toBe("granted");

    // b goes on; a's last echoed pong gets older than WORKER_ABSENT_AFTER_MS
    clock.advance(2);
    await store.hearWorker("default", "b", { heardAt: clock.now() });
    await reservations.tick();
    // b gets every other proxy, and none of a's share (the one it held is no longer renewed: see revocations)
    const got = await grantedTo(store, "b");
    expect(got).toEqual(PROXIES.filter((p) => !shareOfA.includes(p)).sort());
    // only for what the claim names: another domain-key is not kept from b
    expect(await grantedTo(store, "b", "other.example")).toEqual([...PROXIES].sort());
    // a, back, gets its own (the hand-over of its fallback leases)
    expect((await store.acquire(acquire("a", ownId))).kind).toBe("granted");

    // a is heard again: its claim stays reserved LIFT_AFTER_MS after the broker noticed
    await store.hearWorker("default", "a", { heardAt: clock.now() });
    await reservations.tick();
    expect((await store.acquire(acquire("b", shareOfA[2] ?? otherId))).kind).toBe("denied");
    clock.advance(LIFT_AFTER_MS - 1);
    await store.hearWorker("default", "a", { heardAt: clock.now() });
    await reservations.tick();
    expect((await store.acquire(acquire("b", shareOfA[2] ?? otherId))).kind).toBe("denied");
    clock.advance(2);
    await store.hearWorker("default", "a", { heardAt: clock.now() });
    await reservations.tick();
    // (b still holds otherId, granted before a fell silent; a holds ownId)
    for (const id of shareOfA.filter((p) => p !== ownId && p !== otherId))
      expect((await store.acquire(acquire("b", id))).kind, id).toBe("granted");
  });

  it("G9: reserve a silent worker's share cut per exit, and its share as a snapshot without exits cut it", async () => {
    const { clock, store, reservations } = await setup();
    // proxies 1–6 leave from one exit, 7–12 from another (what the broker's probes showed)
    for (const [i, id] of PROXIES.entries()) await store.recordHealth("default", id, "pass", 0, i < 6 ? "203.0.113.1" : "203.0.113.2");
    const members = (await store.listProxies("default", { size: 100, after: "" })).proxies.map((p) => ({ id: p.id, exitIp: p.exitIp }));
    clock.advance(10);
    await store.hearWorker("default", "a", { heardAt: clock.now(), claim: claim(1, ["a", "b"], { [SHOP]: "share" }, clock.now()) });
    await store.hearWorker("default", "b", { heardAt: clock.now() });
    clock.advance(ABSENT_MS + 1);
    await store.hearWorker("default", "b", { heardAt: clock.now() });
    await reservations.tick();
    const byExits = shareOfGroups(members, ["a", "b"], "a");
    const byIds = shareOf(PROXIES, ["a", "b"], "a");
    // each exit's six proxies go to one worker together
    const shared = PROXIES.slice(0, 6);
    for (const exit of [shared, PROXIES.slice(6)])
      expect(exit.every((id) => byExits.includes(id)) || exit.every((id) => !byExits.includes(id))).toBe(true);
    const reserved = new Set([...byExits, ...byIds]);
    // each cut gives a some proxies the other does not: reserving either alone would fail below
    expect(reserved.size).toBeGreaterThan(byExits.length);
    expect(reserved.size).toBeGreaterThan(byIds.length);
    // b is granted none of either share for the claimed key: only what neither cut gives a
    const got = await grantedTo(store, "b");
    expect(got.filter((id) => reserved.has(id))).toEqual([]);
    // (and of each exit's proxies, at most one at a time: G9)
    expect(got.filter((id) => shared.includes(id)).length).toBeLessThanOrEqual(1);
    expect(got.filter((id) => !shared.includes(id)).length).toBeLessThanOrEqual(1);
  });

  it("a worker whose requests arrive but whose answers do not is silent all the same: only the echoed pong counts", async () => {
    const { clock, store, reservations } = await setup();
    clock.advance(10);
    const heard = clock.now();
    await store.hearWorker("default", "a", { heardAt: heard, claim: claim(1, ["a", "b"], { [SHOP]: "whole" }, clock.now()) });
    // its pings keep arriving, echoing the last pong it received: no later than `heard`
    for (let i = 0; i < 6; i++) {
      clock.advance(1_000);
      await store.hearWorker("default", "a", { heardAt: heard });
      await store.touchWorker("default", "a"); // and its snapshot requests too
    }
    await reservations.tick();
    expect(await grantedTo(store, "b")).toEqual([]);
  });

  it("reserve nothing for a worker whose claim names nothing (not yet known to the others), nor for one that claims nothing", async () => {
    const { clock, store, written, reservations } = await setup();
    clock.advance(10);
    await store.hearWorker("default", "young", { heardAt: clock.now(), claim: claim(1, ["young", "b"], {}, clock.now()) });
    await store.hearWorker("default", "never-claimed", { heardAt: clock.now() });
    await store.touchWorker("default", "lister"); // a snapshot request alone says nothing of a claim
    clock.advance(ABSENT_MS + 1);
    await store.hearWorker("default", "b", { heardAt: clock.now() });
    await reservations.tick();
    expect(written.at(-1) ?? { proxies: {}, domains: {} }).toMatchObject({ proxies: {}, domains: {} });
    expect(await grantedTo(store, "b")).toEqual([...PROXIES].sort());
  });

  it("reserve both claims a silent worker may be using: the latest it sent, and the one before", async () => {
    const { clock, store, reservations } = await setup();
    clock.advance(10);
    // claim 1 acknowledged: the share of "first.example"; claim 2 sent, perhaps never acknowledged
    await store.hearWorker("default", "a", {
      heardAt: clock.now(),
      claim: claim(1, ["a", "b"], { "first.example": "share" }, clock.now()),
    });
    await store.hearWorker("default", "a", {
      heardAt: clock.now(),
      claim: claim(2, ["a", "b", "c"], { "second.example": "whole" }, clock.now()),
    });
    clock.advance(ABSENT_MS + 1);
    await reservations.tick();
    const shareOfA = shareOf(PROXIES, ["a", "b"], "a");
    expect(await grantedTo(store, "b", "first.example")).toEqual(PROXIES.filter((p) => !shareOfA.includes(p)).sort());
    expect(await grantedTo(store, "b", "second.example")).toEqual([]);
  });

  it("a claim's key ends with its listing: then it is no longer reserved", async () => {
    const { clock, store, reservations } = await setup();
    clock.advance(10);
    const c: FallbackClaim = {
      version: 1,
      members: ["a"],
      keys: [{ domainKey: SHOP, shareKey: SHOP, whole: true, untilMs: clock.now() + ABSENT_MS + 5_000 }],
    };
    await store.hearWorker("default", "a", { heardAt: clock.now(), claim: c });
    clock.advance(ABSENT_MS + 1);
    await reservations.tick();
    expect((await store.acquire(acquire("b"))).kind).toBe("denied");
    clock.advance(5_000);
    await reservations.tick();
    expect((await store.acquire(acquire("b"))).kind).toBe("granted");
  });

  it("a claim holds for everybody from half a second before its worker's fallback may serve it; until then only TTL-keeping callers get it", async () => {
    const { clock, store, written, reservations } = await setup();
    clock.advance(10);
    const heardAt = clock.now();
    await store.hearWorker("default", "a", { heardAt, claim: claim(1, ["a", "b"], { [SHOP]: "share" }, heardAt) });
    await store.hearWorker("default", "b", { heardAt });
    const [first] = shareOf(PROXIES, ["a", "b"], "a") as [string];
    clock.advance(ABSENT_MS + 1);
    await store.hearWorker("default", "b", { heardAt: clock.now() });
    await reservations.tick();
    // its fallback serves the claim from heardAt + silentHoldMs (3 s + 0.5 s + 0.5 s + 3 s + 0.5 s)
    const from = heardAt + 7_500 - 500;
    expect(written.at(-1)?.from).toEqual({ a: from });
    const gap = await store.acquire({ ...acquire("b", first), ttlMs: 30_000, honorsTtl: true });
    expect(gap.kind === "granted" && gap.lease.expireAt).toBe(from);
    // a caller that does not keep to its TTL: nothing of the claim
    expect((await store.acquire(acquire("b", shareOfA(1)))).kind).toBe("denied");
    // from then on, nobody
    clock.advance(from - clock.now() - 499);
    expect((await store.acquire({ ...acquire("b", shareOfA(1)), honorsTtl: true })).kind).toBe("denied");
  });

  it("a worker silent since before the broker started holds its claim at once (it may be in fallback already)", async () => {
    const { clock, store } = await setup();
    await store.hearWorker("default", "a", { heardAt: clock.now(), claim: claim(1, ["a", "b"], { [SHOP]: "share" }, clock.now()) });
    clock.advance(1_000);
    const written: ReservationMap[] = [];
    const restarted = reservationsOn(store, clock, written);
    await restarted.tick();
    expect(written.at(-1)?.from).toEqual({});
    const [first] = shareOf(PROXIES, ["a", "b"], "a") as [string];
    expect((await store.acquire({ ...acquire("b", first), honorsTtl: true })).kind).toBe("denied");
  });

  it("count every worker heard before a restarted broker started as silent", async () => {
    const { clock, store } = await setup();
    await store.hearWorker("default", "a", { heardAt: clock.now(), claim: claim(1, ["a"], { [SHOP]: "share" }, clock.now()) });
    clock.advance(1_000);
    const restarted = reservationsOn(store, clock);
    const seen = await store.liveWorkers("default", 0, { claims: true });
    expect(restarted.silent(seen, clock.now()).map((w) => w.workerId)).toEqual(["a"]);
    await restarted.tick();
    const r = await store.acquire(acquire("b"));
    expect(r.kind).toBe("denied"); // a alone was live: its share is the whole pool
  });

  it("reserve nothing for a worker that left (LeavePool), while one that vanished keeps its claim", async () => {
    const { clock, store, reservations } = await setup();
    clock.advance(10);
    const members = ["left", "stays", "vanished"];
    for (const w of ["left", "vanished"])
      await store.hearWorker("default", w, { heardAt: clock.now(), claim: claim(1, members, { [SHOP]: "share" }, clock.now()) });
    await store.hearWorker("default", "stays", { heardAt: clock.now() });
    const shareOfLeft = shareOf(PROXIES, members, "left");
    const shareOfVanished = shareOf(PROXIES, members, "vanished");
    expect(await store.forgetWorker("default", "left")).toBe(true);
    clock.advance(ABSENT_MS + 1);
    await store.hearWorker("default", "stays", { heardAt: clock.now() });
    await reservations.tick();
    expect(await grantedTo(store, "stays")).toEqual(PROXIES.filter((p) => !shareOfVanished.includes(p)).sort());
    expect(shareOfLeft.length).toBeGreaterThan(0);
  });
});

describe.each([
  ["the memory store", (clock: FakeClock): LeaseStore => new MemoryStore({ scoring: DEFAULT_SCORING, clock: () => clock.now() })],
  [
    "the Redis store",
    (clock: FakeClock): LeaseStore =>
      new RedisStore({
        client: createRedisClient({ url: redis.url() }),
        scoring: DEFAULT_SCORING,
        clock: () => clock.now(),
        prefix: `fresh${Math.random().toString(36).slice(2, 8)}`,
      }),
  ],
] as const)("A worker restarted under the same worker id (%s)", (_name, makeStore) => {
  it("its first claim (fresh) forgets its predecessor's: silent before it claims anything, it has nothing reserved", async () => {
    const clock = fakeClock();
    const store = makeStore(clock);
    try {
      await store.addProxies(
        "default",
        PROXIES.map((id) => ({ id, url: `http://${id}`, tier: "", labels: {} })),
      );
      const reservations = reservationsOn(store, clock);
      clock.advance(10);
      // the predecessor's two claims: the whole site
      await store.hearWorker("default", "w", { heardAt: clock.now(), claim: claim(1_000, ["w"], { [SHOP]: "whole" }, clock.now()) });
      await store.hearWorker("default", "w", { heardAt: clock.now(), claim: claim(1_001, ["w"], { [SHOP]: "whole" }, clock.now()) });
      // killed; a new process under the same id says its first claim (empty: it is not known yet)
      clock.advance(1_000);
      await store.hearWorker("default", "w", { heardAt: clock.now(), claim: claim(5_000, ["w"], {}, clock.now()), fresh: true });
      expect(
        (await store.liveWorkers("default", 0, { claims: true })).find((x) => x.workerId === "w")?.claims?.map((c) => c.version),
      ).toEqual([5_000]);
      // then it falls silent, young: nothing is kept from the others
      clock.advance(ABSENT_MS + 1);
      await reservations.tick();
      expect(await grantedTo(store, "b")).toEqual([...PROXIES].sort());
    } finally {
      await store.close();
    }
  });

  it("a fresh claim that arrives after a newer one (a late ping) forgets nothing", async () => {
    const clock = fakeClock();
    const store = makeStore(clock);
    try {
      await store.addProxies("default", [{ id: PROXIES[0] ?? "", url: `http://${PROXIES[0] ?? ""}`, tier: "", labels: {} }]);
      clock.advance(10);
      await store.hearWorker("default", "w", { heardAt: clock.now(), claim: claim(7, ["w"], { [SHOP]: "whole" }, clock.now()) });
      await store.hearWorker("default", "w", { heardAt: clock.now(), claim: claim(8, ["w"], { [SHOP]: "share" }, clock.now()) });
      await store.hearWorker("default", "w", { heardAt: clock.now(), claim: claim(6, ["w"], {}, clock.now()), fresh: true });
      const claims = (await store.liveWorkers("default", 0, { claims: true })).find((x) => x.workerId === "w")?.claims ?? [];
      // the late one is kept as the latest, and the newest before it stays reserved with it
      expect(claims.map((c) => c.version)).toEqual([6, 8]);
    } finally {
      await store.close();
    }
  });
});

describe("Reservations after the store lost its state", () => {
  it("put back the workers and claims seen before a wipe: a silent worker's claim stays reserved, for every replica, until it is back", async () => {
    const clock = fakeClock();
    const store = new RedisStore({ client: createRedisClient({ url: redis.url() }), scoring: DEFAULT_SCORING, clock: () => clock.now() });
    const specs = PROXIES.map((id) => ({ id, url: `http://${id}`, tier: "", labels: {} }));
    try {
      await store.addProxies("default", specs);
      const reservations = reservationsOn(store, clock);
      clock.advance(10);
      await store.hearWorker("default", "a", { heardAt: clock.now(), claim: claim(5, ["a", "b"], { [SHOP]: "share" }, clock.now()) });
      await store.hearWorker("default", "b", { heardAt: clock.now() });
      const shareOfA = shareOf(PROXIES, ["a", "b"], "a");
      // a goes silent (it may be leasing from its fallback pool); b goes on
      clock.advance(ABSENT_MS + 1);
      await store.hearWorker("default", "b", { heardAt: clock.now() });
      await reservations.tick();
      expect((await store.acquire(acquire("b", shareOfA[0]))).kind).toBe("denied");
      // the store loses everything: the workers, their claims, the reservations
      await redis.admin().flushall();
      await store.addProxies("default", specs);
      await store.hearWorker("default", "b", { heardAt: clock.now() });
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
      // and stays so while a is silent, also for a replica that started after the loss
      clock.advance(LIFT_AFTER_MS * 3);
      await store.hearWorker("default", "b", { heardAt: clock.now() });
      await reservations.tick();
      for (const id of shareOfA) expect((await store.acquire(acquire("b", id))).kind, id).toBe("denied");
      const replica = reservationsOn(store, clock);
      await replica.tick();
      for (const id of shareOfA) expect((await store.acquire(acquire("b", id))).kind, id).toBe("denied");
      // a is heard again: its claim is lifted LIFT_AFTER_MS after that
      await store.hearWorker("default", "a", { heardAt: clock.now() });
      await reservations.tick();
      clock.advance(LIFT_AFTER_MS + 1);
      await store.hearWorker("default", "a", { heardAt: clock.now() });
      await reservations.tick();
      for (const id of shareOfA) expect((await store.acquire(acquire("b", id))).kind, id).toBe("granted");
    } finally {
      await store.close();
    }
  });
});
