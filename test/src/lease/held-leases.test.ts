import { describe, expect, it } from "vitest";
import type { Reservations } from "@proxybroker/sdk/model";
import { HeldLeases, reservedFor } from "../../../src/lease/held-leases.js";
import { fakeClock } from "../../support/fake-clock.js";

const reserved: Reservations = {
  proxies: { "p1:1": "silent", "p2:1": "silent" },
  scopes: { silent: ["shop.example", "#fraud"] },
  domains: { "alone.example": "silent", "#market": "other-silent" },
};
const shareKey = (dk: string): string => (dk.startsWith("shop-") ? "#fraud" : dk.endsWith(".market") ? "#market" : dk);

describe("reservedFor (as the stores read a reservation)", () => {
  it("names the worker a pair is kept for: the whole domain-key or share key, or the proxy for its worker's scope", () => {
    expect(reservedFor(reserved, "p9:1", "alone.example", "alone.example")).toBe("silent");
    expect(reservedFor(reserved, "p9:1", "a.market", "#market")).toBe("other-silent");
    expect(reservedFor(reserved, "p1:1", "shop.example", "shop.example")).toBe("silent");
    expect(reservedFor(reserved, "p1:1", "shop-b.example", "#fraud")).toBe("silent");
    expect(reservedFor(reserved, "p1:1", "elsewhere.example", "elsewhere.example")).toBeUndefined();
    expect(reservedFor(reserved, "p9:1", "shop.example", "shop.example")).toBeUndefined();
    // a worker without a scope: its proxies for every domain-key
    expect(reservedFor({ proxies: { "p1:1": "w" }, domains: {} }, "p1:1", "any.example", "any.example")).toBe("w");
  });
});

describe("HeldLeases", () => {
  it("takes out, once, the leases of others on reserved pairs — not the silent worker's own, not other pools'", () => {
    const clock = fakeClock();
    const held = new HeldLeases(() => clock.now());
    const told: string[] = [];
    const lease = (id: string, workerId: string, proxyId: string, domainKey: string, pool = "default") =>
      held.hold(id, { pool, proxyId, domainKey, workerId, fencingToken: 1, expireAt: clock.now() + 30_000, tell: () => told.push(id) });
    lease("l1", "healthy", "p1:1", "shop.example");
    lease("l2", "silent", "p2:1", "shop.example");
    lease("l3", "healthy", "p3:1", "shop.example");
    lease("l4", "healthy", "p9:1", "alone.example");
    lease("l5", "healthy", "p1:1", "shop.example", "other-pool");
    lease("l6", "healthy", "p2:1", "shop-b.example");
    const taken = held.takeReserved("default", reserved, shareKey);
    expect(taken.map((t) => t.leaseId).sort()).toEqual(["l1", "l4", "l6"]);
    expect(held.takeReserved("default", reserved, shareKey)).toEqual([]);
    // a renewal on another stream moves where the holder is told
    held.renewed("l3", clock.now() + 60_000, () => told.push("l3 on its new stream"));
    const moved = held.takeReserved("default", { proxies: { "p3:1": "silent" }, domains: {} }, shareKey);
    for (const t of moved) t.lease.tell();
    expect(told).toEqual(["l3 on its new stream"]);
    held.drop("l2");
    expect(held.size).toBe(1); // l5, in another pool
  });
});

describe("HeldLeases: leases granted before a reservation holds", () => {
  it("a lease that ends before the reservation holds, held by a caller that keeps to its TTL, is not taken", () => {
    const clock = fakeClock();
    const held = new HeldLeases(() => clock.now());
    const from = clock.now() + 4_000;
    const hold = (id: string, expireAt: number, honorsTtl: boolean) =>
      held.hold(id, {
        pool: "default",
        proxyId: "p1:1",
        domainKey: "shop.example",
        workerId: "w",
        fencingToken: 1,
        expireAt,
        honorsTtl,
        tell: () => {},
      });
    hold("gap", from, true);
    hold("longer", from + 1, true);
    hold("stub", from, false);
    const taken = held.takeReserved("default", { proxies: { "p1:1": "silent" }, domains: {}, from: { silent: from } }, (dk) => dk);
    expect(taken.map((t) => t.leaseId).sort()).toEqual(["longer", "stub"]);
    // a reservation that holds at once takes it too
    expect(held.takeReserved("default", { proxies: { "p1:1": "silent" }, domains: {} }, (dk) => dk).map((t) => t.leaseId)).toEqual(["gap"]);
  });
});

describe("HeldLeases: reusable leases (kept leases)", () => {
  const setup = () => {
    const clock = fakeClock();
    const held = new HeldLeases(() => clock.now());
    const wanted: string[] = [];
    const told: string[] = [];
    const lease = (id: string, domainKey: string, o: { pool?: string; reusable?: boolean; proxyId?: string } = {}) =>
      held.hold(id, {
        pool: o.pool ?? "default",
        proxyId: o.proxyId ?? `p-${id}:1`,
        domainKey,
        workerId: "w",
        fencingToken: 1,
        expireAt: clock.now() + 30_000,
        tell: () => told.push(id),
        ...(o.reusable === false ? {} : { want: () => wanted.push(id) }),
      });
    return { clock, held, wanted, told, lease };
  };

  it("counts as give-backs to come only leases before their expiry, and none of a closed stream", () => {
    const { clock, held, lease } = setup();
    const stream = {};
    lease("k1", "shop.example");
    lease("k2", "shop.example");
    expect(held.wantBack("default", "shop.example")).toBe(2);
    // one renewed on a stream that then closed: it can be asked back by nobody
    held.renewed(
      "k2",
      clock.now() + 30_000,
      () => undefined,
      () => undefined,
      stream,
    );
    held.unaskStream(stream);
    expect(held.wantBack("default", "shop.example")).toBe(1);
    // past its known expiry: its holder is gone or renews elsewhere
    clock.advance(31_000);
    expect(held.wantBack("default", "shop.example")).toBe(0);
  });

  it("indexes only leases held with `want`", () => {
    const { held, lease } = setup();
    lease("k1", "shop.example");
    lease("plain", "shop.example", { reusable: false });
    expect(held.size).toBe(2);
    expect(held.reusableCount).toBe(1);
  });

  it("wantBack(pool, key) asks the reusable leases of that key only, and each once", () => {
    const { held, wanted, told, lease } = setup();
    lease("k1", "shop.example");
    lease("k2", "shop.example");
    lease("plain", "shop.example", { reusable: false });
    lease("other-key", "news.example");
    lease("other-pool", "shop.example", { pool: "eu" });
    held.wantBack("default", "shop.example");
    expect(wanted.sort()).toEqual(["k1", "k2"]);
    expect(told).toEqual([]); // asked back, not revoked
    expect(held.reusableCount).toBe(2); // other-key, other-pool
    expect(held.size).toBe(5); // asked leases stay held until released
    held.wantBack("default", "shop.example");
    held.wantBack("default", "unknown.example");
    held.wantBack("nowhere");
    expect(wanted.sort()).toEqual(["k1", "k2"]);
    // a lease of the key granted after the ask is asked on the next one
    lease("k3", "shop.example");
    held.wantBack("default", "shop.example");
    expect(wanted.sort()).toEqual(["k1", "k2", "k3"]);
  });

  it("wantBack(pool) asks every key of the pool, not other pools", () => {
    const { held, wanted, lease } = setup();
    lease("a", "shop.example");
    lease("b", "news.example");
    lease("c", "shop.example", { pool: "eu" });
    lease("plain", "news.example", { reusable: false });
    held.wantBack("default");
    expect(wanted.sort()).toEqual(["a", "b"]);
    expect(held.reusableCount).toBe(1);
    held.wantBack("default");
    held.wantBack("default", "shop.example");
    expect(wanted.sort()).toEqual(["a", "b"]);
    held.wantBack("eu");
    expect(wanted.sort()).toEqual(["a", "b", "c"]);
    expect(held.reusableCount).toBe(0);
  });

  it("drop and takeReserved take leases out of the index: never asked afterwards", () => {
    const { held, wanted, lease } = setup();
    lease("gone", "shop.example");
    lease("kept", "shop.example");
    lease("taken", "shop.example", { proxyId: "p1:1" });
    expect(held.reusableCount).toBe(3);
    held.drop("gone");
    expect(held.reusableCount).toBe(2);
    const taken = held.takeReserved("default", { proxies: { "p1:1": "silent" }, domains: {} }, (dk) => dk);
    expect(taken.map((t) => t.leaseId)).toEqual(["taken"]);
    expect(held.reusableCount).toBe(1);
    held.drop("unknown");
    held.wantBack("default", "shop.example");
    expect(wanted).toEqual(["kept"]);
    held.drop("kept");
    expect(held.reusableCount).toBe(0);
    expect(held.size).toBe(0);
  });

  it("a renewal keeps a reusable lease indexed and asks on the stream that renewed it", () => {
    const { clock, held, wanted, lease } = setup();
    lease("k", "shop.example");
    lease("plain", "shop.example", { reusable: false });
    held.renewed(
      "k",
      clock.now() + 60_000,
      () => undefined,
      () => wanted.push("k on its new stream"),
    );
    // a renewal cannot make a lease reusable that was not granted so
    held.renewed(
      "plain",
      clock.now() + 60_000,
      () => undefined,
      () => wanted.push("plain"),
    );
    expect(held.reusableCount).toBe(1);
    held.wantBack("default", "shop.example");
    expect(wanted).toEqual(["k on its new stream"]);
    // asked once: a renewal after the ask does not put it back in the index
    held.renewed(
      "k",
      clock.now() + 90_000,
      () => undefined,
      () => wanted.push("k again"),
    );
    expect(held.reusableCount).toBe(0);
    held.wantBack("default");
    expect(wanted).toEqual(["k on its new stream"]);
    expect(held.size).toBe(2);
  });

  it("a lease being released is not asked back, even by its own release's wantBack", () => {
    const { held, wanted, told, lease } = setup();
    lease("giving", "shop.example", { proxyId: "p1:1" });
    lease("other", "shop.example");
    held.unask("giving");
    held.unask("unknown");
    expect(held.reusableCount).toBe(1);
    held.wantBack("default", "shop.example");
    expect(wanted).toEqual(["other"]);
    // still held (a failed release leaves it to be revoked) until dropped
    expect(held.size).toBe(2);
    for (const t of held.takeReserved("default", { proxies: { "p1:1": "silent" }, domains: {} }, (dk) => dk)) t.lease.tell();
    expect(told).toEqual(["giving"]);
  });

  it("a lease held again without `want` (a retried request's grant) leaves the index", () => {
    const { held, wanted, lease } = setup();
    lease("retried", "shop.example");
    lease("retried", "shop.example", { reusable: false });
    expect(held.size).toBe(1);
    expect(held.reusableCount).toBe(0);
    held.drop("retried");
    held.wantBack("default", "shop.example");
    expect(wanted).toEqual([]);
    expect(held.reusableCount).toBe(0);
  });

  it("a grant whose key or pool was asked back while it was decided is held, but not reusable", () => {
    const { clock, held, wanted, told, lease } = setup();
    const hold = (id: string, domainKey: string, since: number, pool = "default") =>
      held.hold(
        id,
        {
          pool,
          proxyId: `p-${id}:1`,
          domainKey,
          workerId: "w",
          fencingToken: 1,
          expireAt: clock.now() + 30_000,
          tell: () => told.push(id),
          want: () => wanted.push(id),
        },
        since,
      );
    const before = held.mark();
    held.wantBack("default", "shop.example"); // an acquire denied by the lease on its way
    expect(hold("late", "shop.example", before)).toBe(false);
    expect(hold("other-key", "news.example", before)).toBe(true);
    expect(hold("other-pool", "shop.example", before, "eu")).toBe(true);
    const fresh = held.mark();
    expect(hold("after", "shop.example", fresh)).toBe(true);
    // an ask of the whole pool (policies changed, as an acquire's own reload of them does) does not count
    held.wantBack("default");
    expect(hold("pool-asked", "weather.example", fresh)).toBe(true);
    expect(held.size).toBe(5);
    // held without `want`: asked never, revoked still
    lease("x", "shop.example", { reusable: false });
    wanted.length = 0;
    held.wantBack("default", "shop.example");
    expect(wanted).toEqual([]);
    for (const t of held.takeReserved("default", { proxies: { "p-late:1": "silent" }, domains: {} }, (dk) => dk)) t.lease.tell();
    expect(told).toEqual(["late"]);
  });

  it("a lease swept out after its expiry leaves the index", () => {
    const { clock, held, lease } = setup();
    lease("old", "shop.example");
    clock.advance(120_000);
    lease("fresh", "news.example"); // a hold sweeps the expired
    expect(held.size).toBe(1);
    expect(held.reusableCount).toBe(1);
  });
});
