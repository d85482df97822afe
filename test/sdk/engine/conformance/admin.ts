/**
 * Internal to the conformance suite: admin operations on proxies, and release with `next`.
 */
import { describe, expect, it } from "vitest";
import type { LeaseView } from "@proxybroker/sdk/model";
import {
  acq,
  addProxies,
  allProxies,
  deny,
  denied,
  grant,
  granted,
  openStore,
  outcome,
  proxySpec,
  proxyView,
  release,
  renew,
  TTL,
  type Harness,
  type StoreFactory,
} from "./harness.js";

const sorted = (xs: readonly string[]): string[] => [...xs].sort();

function releaseWithNext(h: Harness, lease: LeaseView, token = lease.fencingToken, next = acq({ workerId: "worker-2" })) {
  return h.store.release({ leaseId: lease.leaseId, fencingToken: token, outcome: outcome("SUCCESS"), next });
}

export function adminSuite(factory: StoreFactory): void {
  describe("admin", () => {
    it("addProxies tells added from updated; an update keeps score and state and moves the tier", async () => {
      const h = await openStore(factory);
      const [p0, p1, p2] = [0, 1, 2].map((i) => proxySpec(i));
      const first = await h.store.addProxies("default", [p0!, p1!]);
      expect({ added: sorted(first.added), updated: first.updated }).toEqual({ added: sorted([p0!.id, p1!.id]), updated: [] });
      await h.store.recordHealth("default", p0!.id, "pass");
      const moved = proxySpec(0, { url: "http://user:secret@10.1.0.0:3128", tier: "residential", labels: { country: "de" } });
      expect(await h.store.addProxies("default", [moved, p2!])).toEqual({ added: [p2!.id], updated: [p0!.id] });
      expect(await proxyView(h, p0!.id)).toMatchObject({ ...moved, score: 53, state: "ACTIVE" });
      expect((await grant(h, acq({ tier: "residential" }))).proxy.id).toBe(p0!.id);
      expect(await deny(h, acq({ tier: "residential" }))).toBe(TTL);
      const dc = [await grant(h, acq({ tier: "datacenter" })), await grant(h, acq({ tier: "datacenter" }))];
      expect(sorted(dc.map((l) => l.proxy.id))).toEqual(sorted([p1!.id, p2!.id]));
      await deny(h, acq({ tier: "datacenter" }));
    });

    it("an update does not bring a quarantined proxy back", async () => {
      const h = await openStore(factory, { scoring: { initialScore: 20 } });
      const [id] = await addProxies(h, 1);
      await h.store.recordHealth("default", id!, "fail");
      expect(await h.store.recordHealth("default", id!, "fail")).toMatchObject({ state: "QUARANTINED" });
      expect(await h.store.addProxies("default", [proxySpec(0, { tier: "mobile" })])).toEqual({ added: [], updated: [id] });
      expect(await proxyView(h, id!)).toMatchObject({ state: "QUARANTINED", tier: "mobile", score: 0 });
      await deny(h, acq({ tier: "mobile" }));
      await deny(h);
    });

    it("removeProxies takes a proxy out; its live lease keeps the pair until it expires", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const lease = await grant(h);
      expect(await h.store.removeProxies("default", [id!, "10.9.9.9:1"])).toEqual({ removed: [id], notFound: ["10.9.9.9:1"] });
      expect(await allProxies(h)).toEqual([]);
      // nothing in the pool can become eligible: the removed proxy's busy entry does not count
      expect(await deny(h)).toBe(-1);
      expect(await h.store.addProxies("default", [proxySpec(0)])).toEqual({ added: [id], updated: [] });
      expect(await proxyView(h, id!)).toMatchObject({ score: h.scoring.initialScore, state: "ACTIVE", successCount: 0 });
      expect(await deny(h)).toBe(lease.expireAt - h.clock.now());
      h.clock.advance(TTL);
      expect((await grant(h)).fencingToken).toBeGreaterThan(lease.fencingToken);
    });

    it("a lease of a removed proxy releases as released, without scoring", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const lease = await grant(h);
      await h.store.removeProxies("default", [id!]);
      expect(await release(h, lease, "PROXY_ERROR")).toEqual({ kind: "released" });
      expect(await allProxies(h)).toEqual([]);
      await h.store.addProxies("default", [proxySpec(0)]);
      expect(await proxyView(h, id!)).toMatchObject({ score: h.scoring.initialScore, failureCount: 0 });
      await grant(h);
    });

    it("listProxies pages in byte order of ids; all pages together list every id once", async () => {
      const h = await openStore(factory);
      const ids = [
        ...Array.from({ length: 12 }, (_, i) => `10.0.0.${i}:8080`),
        ...["a", "b", "c", "d", "e"].map((x) => `proxy-${x}.example:3128`),
        "192.168.1.1:1080",
        "8.8.8.8:80",
        "9.9.9.9:9",
        "a:1",
        "a.b:1",
        "z.example:65535",
        "10.0.0.1:80",
        "10.0.0.1:8",
      ];
      expect(ids).toHaveLength(25);
      const shuffled = ids
        .map((id, i) => ({ id, k: (i * 7) % 25 }))
        .sort((x, y) => x.k - y.k)
        .map((x) => x.id);
      await h.store.addProxies(
        "default",
        shuffled.slice(0, 13).map((id) => proxySpec(0, { id })),
      );
      await h.store.addProxies(
        "default",
        shuffled.slice(13).map((id) => proxySpec(0, { id })),
      );
      const expected = sorted(ids);
      for (const [size, sizes] of [
        [7, [7, 7, 7, 4]],
        [5, [5, 5, 5, 5, 5]],
        [25, [25]],
        [100, [25]],
      ] as const) {
        const seen: string[] = [];
        const pageSizes: number[] = [];
        let after = "";
        for (let guard = 0; guard < 30; guard++) {
          const page = await h.store.listProxies("default", { size, after });
          const pageIds = page.proxies.map((p) => p.id);
          pageSizes.push(pageIds.length);
          seen.push(...pageIds);
          expect(page.next, `size ${size}`).toBe(seen.length < ids.length ? pageIds.at(-1) : "");
          if (page.next === "") break;
          after = page.next;
        }
        expect(pageSizes, `size ${size}`).toEqual(sizes);
        expect(seen, `size ${size}`).toEqual(expected);
      }
      const tail = await h.store.listProxies("default", { size: 100, after: "10.0.0.15" });
      expect(tail.proxies.map((p) => p.id)).toEqual(expected.filter((id) => id > "10.0.0.15"));
      expect(await h.store.listProxies("default", { size: 10, after: expected.at(-1)! })).toEqual({ proxies: [], next: "" });
    });
  });

  describe("admin actions on proxies", () => {
    it("disable: no new grants, a live lease runs on and is released; enable brings it back with its score; repeats and unknown ids are told apart", async () => {
      const h = await openStore(factory);
      const [a] = await addProxies(h, 1);
      await h.store.recordHealth("default", a!, "pass"); // score 53
      const lease = await grant(h, acq({ domainKey: "x.example" }));
      expect(await h.store.proxyAction("default", [a!, "10.9.9.9:1"], { kind: "disable" })).toEqual({
        changed: [a],
        unchanged: [],
        notFound: ["10.9.9.9:1"],
      });
      expect(await h.store.proxyAction("default", [a!], { kind: "disable" })).toEqual({ changed: [], unchanged: [a], notFound: [] });
      expect((await proxyView(h, a!)).state).toBe("DISABLED");
      await deny(h);
      expect((await renew(h, lease)).kind).toBe("renewed");
      expect((await release(h, lease)).kind).toBe("released");
      expect(await h.store.proxyAction("default", [a!], { kind: "enable" })).toEqual({ changed: [a], unchanged: [], notFound: [] });
      expect(await proxyView(h, a!)).toMatchObject({ state: "ACTIVE", score: 55 });
      await grant(h);
      expect(await h.store.proxyAction("default", [a!], { kind: "enable" })).toEqual({ changed: [], unchanged: [a], notFound: [] });
    });

    it("ban on one domain-key for a TTL: that pair is refused until then, other domain-keys keep the proxy; unban lifts it", async () => {
      const h = await openStore(factory);
      const [a] = await addProxies(h, 1);
      expect((await h.store.proxyAction("default", [a!], { kind: "ban", domainKey: "shop.example.com", ttlMs: 60_000 })).changed).toEqual([
        a,
      ]);
      expect(await deny(h)).toBe(60_000);
      const other = await grant(h, acq({ domainKey: "other.example" }));
      await release(h, other);
      expect((await proxyView(h, a!)).state).toBe("ACTIVE");
      expect((await h.store.proxyAction("default", [a!], { kind: "unban", domainKey: "shop.example.com" })).changed).toEqual([a]);
      expect((await h.store.proxyAction("default", [a!], { kind: "unban", domainKey: "shop.example.com" })).unchanged).toEqual([a]);
      await grant(h);
    });

    it("ban everywhere for a TTL: out of every grant, the quarantine count untouched, back with its own score; never shortens a longer quarantine; unban ends it", async () => {
      const h = await openStore(factory);
      const [a, b] = await addProxies(h, 2);
      for (let i = 0; i < 10; i++) await h.store.recordHealth("default", a!, "pass"); // 80
      expect((await h.store.proxyAction("default", [a!], { kind: "ban", domainKey: "", ttlMs: 30_000 })).changed).toEqual([a]);
      expect(await proxyView(h, a!)).toMatchObject({ state: "QUARANTINED", quarantineCount: 0, quarantineUntil: h.clock.now() + 30_000 });
      for (let i = 0; i < 3; i++) expect((await grant(h, acq({ domainKey: `d${i}.example` }))).proxy.id).toBe(b);
      // a second, shorter ban does not shorten it
      await h.store.proxyAction("default", [a!], { kind: "ban", domainKey: "", ttlMs: 1_000 });
      expect((await proxyView(h, a!)).quarantineUntil).toBe(h.clock.now() + 30_000);
      h.clock.advance(30_000);
      expect((await grant(h, acq({ domainKey: "later.example" }))).proxy.id).toBe(a);
      expect(await proxyView(h, a!)).toMatchObject({ state: "ACTIVE", score: 80, quarantineCount: 0 });
      await h.store.proxyAction("default", [b!], { kind: "ban", domainKey: "", ttlMs: 600_000 });
      expect((await h.store.proxyAction("default", [b!], { kind: "unban", domainKey: "" })).changed).toEqual([b]);
      expect((await proxyView(h, b!)).state).toBe("ACTIVE");
      expect((await h.store.proxyAction("default", [b!], { kind: "unban", domainKey: "" })).unchanged).toEqual([b]);
    });
  });

  describe("release with next", () => {
    it("releases and acquires in one call; the next grant sees the release applied", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const lease = await grant(h);
      const r = await releaseWithNext(h, lease);
      expect(r.kind).toBe("released");
      const next = granted(r.next, "next");
      expect(next.proxy).toMatchObject({ id, score: h.scoring.initialScore + h.scoring.delta.SUCCESS, lastUsedBy: "worker-2" });
      expect(next.fencingToken).toBeGreaterThan(lease.fencingToken);
      expect(await renew(h, next)).toMatchObject({ kind: "renewed" });
    });

    it("answers a denied next when nothing is eligible", async () => {
      const h = await openStore(factory);
      await addProxies(h, 1);
      const paced = acq({ minIntervalMs: 5_000 });
      const lease = await grant(h, paced);
      h.clock.advance(1_000);
      const r = await releaseWithNext(h, lease, lease.fencingToken, paced);
      expect(r.kind).toBe("released");
      // paced from the release (the default anchor)
      expect(denied(r.next, "next")).toBe(5_000);
    });

    it("next rides on lost answers too: REVOKED, NOT_FOUND and EXPIRED", async () => {
      const h = await openStore(factory);
      const [id] = await addProxies(h, 1);
      const lease = await grant(h);
      const revoked = await releaseWithNext(h, lease, lease.fencingToken + 1);
      expect(revoked).toMatchObject({ kind: "lost", reason: "REVOKED" });
      expect(denied(revoked.next, "next after REVOKED")).toBe(TTL); // the holder kept its lease
      const unknown = await h.store.release({
        leaseId: "0".repeat(32),
        fencingToken: 1,
        outcome: outcome("SUCCESS"),
        next: acq({ workerId: "worker-2" }),
      });
      expect(unknown).toMatchObject({ kind: "lost", reason: "NOT_FOUND" });
      expect(denied(unknown.next, "next after NOT_FOUND")).toBe(TTL);
      h.clock.advance(TTL);
      const expired = await releaseWithNext(h, lease);
      expect(expired).toMatchObject({ kind: "lost", reason: "EXPIRED" });
      const next = granted(expired.next, "next after EXPIRED");
      expect(next.proxy.id).toBe(id);
      expect(next.fencingToken).toBeGreaterThan(lease.fencingToken);
    });
  });
}
