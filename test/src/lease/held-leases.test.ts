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
