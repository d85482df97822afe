/**
 * Internal to the conformance suite: TTL expiry, heartbeats (G3), fencing tokens (G4) and the
 * answers to renews and releases of leases the caller no longer holds.
 */
import { describe, expect, it } from "vitest";
import { acq, addProxies, DOMAIN, deny, grant, openStore, outcome, proxyView, release, renew, TTL, type StoreFactory } from "./harness.js";

export function leaseSuite(factory: StoreFactory): void {
  describe("G3 TTL expiry", () => {
    it("frees the proxy at the moment the lease expires", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const lease = await grant(h);
      expect(lease.expireAt).toBe(h.clock.now() + TTL);
      h.clock.advance(TTL - 1);
      expect(await deny(h)).toBe(1);
      h.clock.advance(1);
      const next = await grant(h, acq({ workerId: "worker-2" }));
      expect(next.proxy.id).toBe(lease.proxy.id);
      expect(next.fencingToken).toBeGreaterThan(lease.fencingToken);
    });

    it("renew of an expired lease answers lost EXPIRED", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const lease = await grant(h);
      h.clock.advance(TTL);
      expect(await renew(h, lease)).toEqual({ kind: "lost", reason: "EXPIRED" });
      h.clock.advance(5 * 60_000);
      expect(await renew(h, lease, 10_000)).toEqual({ kind: "lost", reason: "EXPIRED" });
    });

    it("release of an expired lease answers lost EXPIRED and still applies its outcome", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const lease = await grant(h);
      h.clock.advance(TTL + 1);
      expect(await release(h, lease, "PROXY_ERROR")).toMatchObject({ kind: "lost", reason: "EXPIRED" });
      // a retried release is not a second observation (its answer is not pinned by the doc)
      const retry = await release(h, lease, "PROXY_ERROR");
      expect(["lost", "released"]).toContain(retry.kind);
      const view = await proxyView(h, id!);
      expect(view.score).toBe(h.scoring.initialScore + h.scoring.delta.PROXY_ERROR);
      expect(view.failureCount).toBe(1);
    });

    it("a late release of an expired lease does not free the proxy for its new holder", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const old = await grant(h);
      h.clock.advance(TTL);
      const current = await grant(h, acq({ workerId: "worker-2" }));
      expect(await release(h, old, "SUCCESS")).toMatchObject({ kind: "lost", reason: "EXPIRED" });
      expect(await deny(h, acq({ workerId: "worker-3" }))).toBe(current.expireAt - h.clock.now());
      expect(await renew(h, current)).toEqual({ kind: "renewed", expireAt: h.clock.now() + TTL, ttlMs: TTL });
    });
  });

  describe("G3 heartbeats", () => {
    it("renewing every ttl/3 keeps the lease for 3× ttl while others are denied", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const lease = await grant(h);
      for (let beat = 1; beat <= 9; beat++) {
        h.clock.advance(TTL / 3);
        expect(await renew(h, lease), `beat ${beat}`).toEqual({ kind: "renewed", expireAt: h.clock.now() + TTL, ttlMs: TTL });
        expect(await deny(h, acq({ workerId: "worker-2" })), `beat ${beat}`).toBe(TTL);
      }
      expect(await release(h, lease)).toMatchObject({ kind: "released" });
      expect((await grant(h, acq({ workerId: "worker-2" }))).proxy.id).toBe(lease.proxy.id);
    });

    it("renew with ttlMs 0 keeps the lease's own ttl; an explicit ttl extends to now + ttl", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const lease = await grant(h, acq({ ttlMs: 12_000 }));
      h.clock.advance(5_000);
      expect(await renew(h, lease, 0)).toEqual({ kind: "renewed", expireAt: h.clock.now() + 12_000, ttlMs: 12_000 });
      h.clock.advance(5_000);
      expect(await renew(h, lease, 60_000)).toEqual({ kind: "renewed", expireAt: h.clock.now() + 60_000, ttlMs: 60_000 });
      h.clock.advance(20_000);
      expect(await deny(h, acq({ workerId: "worker-2" }))).toBe(40_000);
    });
  });

  describe("G4 fencing tokens", () => {
    it("strictly increase per (proxy, domain-key) across grants, expiries, re-grants and re-adds", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const tokens: number[] = [];
      const first = await grant(h);
      // clock-derived (µs), so they keep increasing even when the store lost a pair's state
      expect(first.fencingToken).toBeGreaterThanOrEqual(h.clock.now() * 1000);
      tokens.push(first.fencingToken);
      await release(h, first);
      const second = await grant(h); // same instant: previous + 1
      expect(second.fencingToken).toBe(first.fencingToken + 1);
      tokens.push(second.fencingToken);
      h.clock.advance(TTL); // expires
      const third = await grant(h);
      tokens.push(third.fencingToken);
      // a grant for another domain-key does not disturb this pair's sequence
      await grant(h, acq({ domainKey: "other.example" }));
      await release(h, third, "TARGET_ERROR");
      await h.store.removeProxies("default", [id!]);
      await h.store.addProxies("default", [{ id: id!, url: `http://${id!}`, tier: "datacenter", labels: {} }]);
      h.clock.advance(1);
      const fourth = await grant(h);
      tokens.push(fourth.fencingToken);
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]!, `grant ${i}`).toBeGreaterThan(tokens[i - 1]!);
    });

    it("renew keeps the token: the holder can still release with the token of the grant", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const lease = await grant(h);
      h.clock.advance(TTL / 2);
      expect(await renew(h, lease)).toMatchObject({ kind: "renewed" });
      h.clock.advance(TTL / 2);
      expect(await renew(h, lease)).toMatchObject({ kind: "renewed" });
      expect(await release(h, lease)).toMatchObject({ kind: "released" });
    });
  });

  describe("lost leases", () => {
    it("a wrong token answers REVOKED and changes nothing", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const lease = await grant(h);
      const wrong = { leaseId: lease.leaseId, fencingToken: lease.fencingToken + 1 };
      expect(await h.store.renew({ ...wrong, ttlMs: 0 })).toEqual({ kind: "lost", reason: "REVOKED" });
      expect(await h.store.release({ ...wrong, outcome: outcome("PROXY_ERROR") })).toMatchObject({
        kind: "lost",
        reason: "REVOKED",
      });
      const view = await proxyView(h, id!);
      expect(view.score).toBe(h.scoring.initialScore);
      expect(view.failureCount).toBe(0);
      expect(await deny(h, acq({ workerId: "worker-2" }))).toBe(TTL);
      expect(await renew(h, lease)).toMatchObject({ kind: "renewed" });
      expect(await release(h, lease)).toMatchObject({ kind: "released" });
    });

    it("unknown and malformed lease ids answer NOT_FOUND", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const real = await grant(h);
      const unknown = real.leaseId.replace(/./g, (c) => (c === "0" ? "1" : "0"));
      for (const leaseId of [unknown, "", "garbage", "{default}:lease", "../../etc", "x".repeat(300), "ünïcödé"]) {
        expect(await h.store.renew({ leaseId, fencingToken: 1, ttlMs: 0 }), leaseId).toEqual({
          kind: "lost",
          reason: "NOT_FOUND",
        });
        expect(await h.store.release({ leaseId, fencingToken: 1, outcome: outcome("SUCCESS") }), leaseId).toMatchObject({
          kind: "lost",
          reason: "NOT_FOUND",
        });
      }
      expect(await renew(h, real)).toMatchObject({ kind: "renewed" });
    });

    it("after a release: renew answers NOT_FOUND, a repeated release answers released and scores once", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const lease = await grant(h);
      expect(await release(h, lease, "SUCCESS")).toEqual({ kind: "released" });
      expect(await release(h, lease, "SUCCESS")).toEqual({ kind: "released" });
      expect(await release(h, lease, "PROXY_ERROR")).toEqual({ kind: "released" });
      const view = await proxyView(h, id!);
      expect(view.score).toBe(h.scoring.initialScore + h.scoring.delta.SUCCESS);
      expect(view.successCount).toBe(1);
      expect(view.failureCount).toBe(0);
      expect(await renew(h, lease)).toEqual({ kind: "lost", reason: "NOT_FOUND" });
      h.clock.advance(TTL + 1);
      expect(await renew(h, lease)).toEqual({ kind: "lost", reason: "NOT_FOUND" });
    });
  });
}

/** A retried acquire (same worker id and request id) gets the lease its first attempt got. */
export function retrySuite(factory: StoreFactory): void {
  describe("idempotent acquires", () => {
    it("the same request gets the same lease while it is held; another worker's does not", async () => {
      const h = await openStore(factory);
      await addProxies(h, 3);
      const first = await grant(h, acq({ requestId: "r1" }));
      h.clock.advance(1_000);
      const again = await grant(h, acq({ requestId: "r1" }));
      expect(again.leaseId).toBe(first.leaseId);
      expect(again.fencingToken).toBe(first.fencingToken);
      expect(again.proxy.id).toBe(first.proxy.id);
      expect(again.expireAt).toBe(first.expireAt);
      const other = await grant(h, acq({ requestId: "r1", workerId: "worker-2" }));
      expect(other.leaseId).not.toBe(first.leaseId);
      // a renewed lease comes back with its new expiry; a released one is not handed out again
      await renew(h, first, 40_000);
      expect((await grant(h, acq({ requestId: "r1" }))).expireAt).toBe(h.clock.now() + 40_000);
      await release(h, first);
      const fresh = await grant(h, acq({ requestId: "r1" }));
      expect(fresh.leaseId).not.toBe(first.leaseId);
    });

    it("a denial is not remembered: the retry is decided anew", async () => {
      const h = await openStore(factory);
      expect(await deny(h, acq({ requestId: "r2" }))).toBe(-1);
      await addProxies(h, 1);
      await grant(h, acq({ requestId: "r2" }));
    });

    it("the memory of a request lasts a minute", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      const first = await grant(h, acq({ requestId: "r3", ttlMs: 120_000 }));
      h.clock.advance(60_000);
      expect((await grant(h, acq({ requestId: "r3" }))).leaseId).not.toBe(first.leaseId);
    });
  });
}

/** An acquire for one given proxy (a fallback lease handed over to the broker). */
export function proxyIdSuite(factory: StoreFactory): void {
  describe("acquire of one given proxy", () => {
    it("grants that proxy or nothing, and says when it frees", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 3);
      const wanted = ids[2]!;
      const lease = await grant(h, acq({ proxyId: wanted }));
      expect(lease.proxy.id).toBe(wanted);
      expect(await deny(h, acq({ proxyId: wanted }))).toBe(TTL);
      await release(h, lease);
      expect((await grant(h, acq({ proxyId: wanted }))).proxy.id).toBe(wanted);
      // another domain-key is free; an unknown or removed proxy is never granted
      expect((await grant(h, acq({ proxyId: wanted, domainKey: "other.example" }))).proxy.id).toBe(wanted);
      expect(await deny(h, acq({ proxyId: "10.200.0.1:3128" }))).toBe(-1);
      await h.store.removeProxies("default", [ids[1]!]);
      expect(await deny(h, acq({ proxyId: ids[1]! }))).toBe(-1);
    });

    it("a worker that only touched the pool is live", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      await h.store.touchWorker("default", "quiet-worker");
      expect((await h.store.liveWorkers("default", h.clock.now())).map((w) => w.workerId)).toEqual(["quiet-worker"]);
    });
  });
}

/** Reservations: proxies a silent worker may be using from its fallback pool. */
export function reservationSuite(factory: StoreFactory): void {
  describe("reservations", () => {
    it("a reserved proxy is granted to its worker only, until the reservation is lifted", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 2);
      await h.store.reserve("default", { proxies: { [ids[0]!]: "silent-worker" }, domains: {} });
      const others = await grant(h, acq({ workerId: "w1" }));
      expect(others.proxy.id).toBe(ids[1]);
      expect(await deny(h, acq({ workerId: "w2" }))).toBeGreaterThan(0);
      expect(await deny(h, acq({ workerId: "w2", proxyId: ids[0]! }))).toBe(-1);
      // the silent worker itself, back, gets it (its hand-over)
      expect((await grant(h, acq({ workerId: "silent-worker", proxyId: ids[0]! }))).proxy.id).toBe(ids[0]);
      await h.store.reserve("default", { proxies: {}, domains: {} });
      expect((await grant(h, acq({ workerId: "w2", domainKey: "other.example" }))).proxy.id).toBeDefined();
      // many at once
      const many = Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`10.77.${i >> 8}.${i & 255}:3128`, `w${i}`]));
      await h.store.reserve("default", { proxies: many, domains: {} });
      await h.store.reserve("default", { proxies: {}, domains: {} });
    });

    it("a lease on a proxy reserved for another worker is not extended: REVOKED, and it runs out at its expiry", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 1);
      const l = await grant(h, acq({ workerId: "w1", ttlMs: 1_000 }));
      expect(l.proxy.id).toBe(ids[0]);
      // its own worker's reservation does not stop it
      await h.store.reserve("default", { proxies: { [ids[0]!]: "w1" }, domains: {} });
      expect((await h.store.renew({ leaseId: l.leaseId, fencingToken: l.fencingToken, ttlMs: 1_000, workerId: "w1" })).kind).toBe(
        "renewed",
      );
      await h.store.reserve("default", { proxies: { [ids[0]!]: "silent-worker" }, domains: {} });
      h.clock.advance(100);
      expect(await h.store.renew({ leaseId: l.leaseId, fencingToken: l.fencingToken, ttlMs: 1_000, workerId: "w1" })).toEqual({
        kind: "lost",
        reason: "REVOKED",
      });
      expect(await h.store.renew({ leaseId: l.leaseId, fencingToken: l.fencingToken, ttlMs: 1_000 })).toEqual({
        kind: "lost",
        reason: "REVOKED",
      });
      // still held until its expiry: not even the reserved worker gets the pair before that
      expect(await deny(h, acq({ workerId: "silent-worker", proxyId: ids[0]! }))).toBeGreaterThan(0);
      h.clock.advance(1_000);
      expect((await grant(h, acq({ workerId: "silent-worker", proxyId: ids[0]! }))).proxy.id).toBe(ids[0]);
    });

    it("a proxy reserved for a worker's domain-keys is granted to others for the rest", async () => {
      const h = await openStore(factory);
      const ids = await addProxies(h, 1);
      const other = "other.example";
      const onOther = await grant(h, acq({ workerId: "w1", domainKey: other, ttlMs: 1_000 }));
      const onShop = await grant(h, acq({ workerId: "w1", ttlMs: 1_000 }));
      await h.store.reserve("default", { proxies: { [ids[0]!]: "silent-worker" }, domains: {}, scopes: { "silent-worker": [DOMAIN] } });
      h.clock.advance(100);
      const renew = (l: typeof onOther) =>
        h.store.renew({ leaseId: l.leaseId, fencingToken: l.fencingToken, ttlMs: 1_000, workerId: "w1" });
      expect((await renew(onOther)).kind).toBe("renewed");
      expect(await renew(onShop)).toEqual({ kind: "lost", reason: "REVOKED" });
      h.clock.advance(1_000);
      expect(await deny(h, acq({ workerId: "w2" }))).toBe(-1);
      expect(await deny(h, acq({ workerId: "w2", proxyId: ids[0]! }))).toBe(-1);
      await release(h, onOther);
      h.clock.advance(1_000);
      expect((await grant(h, acq({ workerId: "w2", domainKey: other, proxyId: ids[0]! }))).proxy.id).toBe(ids[0]);
      // an empty scope: reserved for no domain-key; none given: for every one
      await h.store.reserve("default", { proxies: { [ids[0]!]: "silent-worker" }, domains: {}, scopes: { "silent-worker": [] } });
      expect((await grant(h, acq({ workerId: "w3", domainKey: "third.example" }))).proxy.id).toBe(ids[0]);
      await h.store.reserve("default", { proxies: { [ids[0]!]: "silent-worker" }, domains: {} });
      expect(await deny(h, acq({ workerId: "w3", domainKey: "fourth.example", proxyId: ids[0]! }))).toBe(-1);
    });

    it("lists which workers keep a fallback pool: an acquire that says so, or a snapshot request", async () => {
      const h = await openStore(factory);
      await addProxies(h, 3);
      await grant(h, acq({ workerId: "sdk", fallbackPool: true }));
      await grant(h, acq({ workerId: "stub", domainKey: "b.example" }));
      h.clock.advance(10);
      await h.store.touchWorker("default", "snapshotter");
      const seen = await h.store.liveWorkers("default", 0);
      expect(seen.map((w) => [w.workerId, w.fallbackPoolAt > 0])).toEqual([
        ["sdk", true],
        ["snapshotter", true],
        ["stub", false],
      ]);
    });

    it("lists which workers yield their leases: an acquire that says so", async () => {
      const h = await openStore(factory);
      await addProxies(h, 2);
      await grant(h, acq({ workerId: "python", yieldsLeases: true }));
      await grant(h, acq({ workerId: "stub", domainKey: "b.example" }));
      const seen = await h.store.liveWorkers("default", 0);
      expect(seen.map((w) => [w.workerId, (w.yieldsLeasesAt ?? 0) > 0])).toEqual([
        ["python", true],
        ["stub", false],
      ]);
    });

    it("a renew keeps a live worker live, but does not bring back a silent one", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const l = await grant(h, acq({ workerId: "long-download", ttlMs: 120_000 }));
      const renewAs = (liveSince: number) =>
        h.store.renew({ leaseId: l.leaseId, fencingToken: l.fencingToken, ttlMs: 0, workerId: "long-download", liveSince });
      const seen = async () => (await h.store.liveWorkers("default", h.clock.now() - 1)).map((w) => w.workerId);
      h.clock.advance(5_000);
      expect((await renewAs(h.clock.now() - 8_000)).kind).toBe("renewed"); // seen 5 s ago: live
      expect(await seen()).toEqual(["long-download"]);
      h.clock.advance(10_000);
      expect((await renewAs(h.clock.now() - 8_000)).kind).toBe("renewed"); // seen 10 s ago: silent
      expect(await seen()).toEqual([]);
    });
  });
}
