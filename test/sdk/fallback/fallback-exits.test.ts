/**
 * Exit IPs in the local fallback pool (G9): shares are cut per exit group, and a local lease of
 * one proxy holds its whole exit group for the domain-key, with the group's pacing.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { policySpec, shareOf, type OutcomeInput, type ProxyView } from "@proxybroker/sdk/model";
import type { FallbackPool, FallbackAcquireRequest, FallbackPoolOptions } from "../../../sdk/src/fallback/fallback-pool.js";
import { loadSnapshotFile, saveSnapshotFile, type PoolSnapshot } from "../../../sdk/src/fallback/snapshot.js";
import type { DomainListing } from "../../../sdk/src/fallback/domain-shares.js";
import { fakeClock, type FakeClock } from "../../support/fake-clock.js";
import { proxyView } from "../../support/proxy-view.js";
import { fallbackPoolOn, fallbackRequest } from "../../support/fallback-fixtures.js";

function proxy(i: number, exitIp: string): ProxyView {
  return proxyView(`10.5.0.${i}:3128`, { exitIp });
}

/** 0–23 in groups of 4 per exit, 24–39 of no known exit. */
const PROXIES = Array.from({ length: 40 }, (_, i) => proxy(i, i < 24 ? `198.51.100.${i >> 2}` : ""));

function snapshot(over: Partial<PoolSnapshot> = {}): PoolSnapshot {
  return { pool: "default", proxies: PROXIES, liveWorkers: ["A", "B"], policies: [], takenAt: 1_699_999_990_000, ...over };
}

const SUCCESS: OutcomeInput = { kind: "SUCCESS", httpStatus: 200, latencyMs: 0, retryAfterMs: 0 };

const req = (host: string, over: Partial<FallbackAcquireRequest> = {}): FallbackAcquireRequest =>
  fallbackRequest(host, { ttlMs: 10_000, ...over });

let clock: FakeClock;
let dir: string;
const make = (o: Partial<FallbackPoolOptions> & { workerId: string }): FallbackPool => fallbackPoolOn(() => clock, o);

beforeEach(async () => {
  clock = fakeClock();
  dir = await mkdtemp(join(tmpdir(), "pb-fallback-exits-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("fallback shares per exit group", () => {
  it("give every exit group whole to one worker, and proxies of no shared exit to the owner of their id", async () => {
    const a = make({ workerId: "A" });
    const b = make({ workerId: "B" });
    await a.useSnapshot(snapshot());
    await b.useSnapshot(snapshot());
    expect(new Set([...a.share, ...b.share]).size).toBe(40);
    expect(a.share.length + b.share.length).toBe(40);
    for (let g = 0; g < 6; g++) {
      const ids = PROXIES.slice(g * 4, g * 4 + 4).map((p) => p.id);
      const inA = ids.filter((id) => a.share.includes(id)).length;
      expect([0, 4], `group ${g}`).toContain(inA);
    }
    const ids = PROXIES.map((p) => p.id);
    for (const id of ids.slice(24)) expect(a.share.includes(id), id).toBe(shareOf(ids, ["A", "B"], "A").includes(id));
  });
});

describe("a local lease of one proxy holds its exit group", () => {
  const pair = (exit2: string): PoolSnapshot =>
    snapshot({
      proxies: [proxy(1, "198.51.100.9"), proxy(2, exit2)],
      liveWorkers: [],
      policies: [policySpec({ pattern: "shop.example", minIntervalMs: 5_000 })],
    });

  it("is exclusive per domain-key over the group, and a release paces every member", async () => {
    const p = make({ workerId: "A" });
    await p.useSnapshot(pair("198.51.100.9"));
    const first = await p.acquire(req("shop.example"));
    if (first.kind !== "granted") throw new Error("expected a grant");
    expect(await p.acquire(req("shop.example"))).toEqual({ kind: "denied", retryAfterMs: 15_000 }); // its end + the interval
    const elsewhere = await p.acquire(req("other.example"));
    expect(elsewhere.kind).toBe("granted");
    const sibling = first.lease.proxy.id === "10.5.0.1:3128" ? "10.5.0.2:3128" : "10.5.0.1:3128";
    expect(p.usedLately(sibling, "shop.example", clock.now())).toBe(true);
    expect(p.usedLately(sibling, "other.example", clock.now())).toBe(true);
    expect(p.usedLately(sibling, "third.example", clock.now())).toBe(false);
    clock.advance(1_000);
    await p.release(first.lease.leaseId, first.lease.fencingToken, SUCCESS);
    expect(await p.acquire(req("shop.example"))).toEqual({ kind: "denied", retryAfterMs: 5_000 });
    expect(p.usedLately(sibling, "shop.example", clock.now())).toBe(true);
    clock.advance(5_000);
    expect(p.usedLately(sibling, "shop.example", clock.now())).toBe(false);
    expect((await p.acquire(req("shop.example"))).kind).toBe("granted");
  });

  it("holds the group in the store of the domain-keys this worker alone is listed with", async () => {
    const listing: DomainListing = { domainKey: "shop.example", listedForMs: 0, expiresInMs: 600_000 };
    const domains = { A: [listing] };
    const p = make({ workerId: "A" });
    await p.useSnapshot({ ...pair("198.51.100.9"), liveWorkers: ["A"], domains, takenAt: clock.now() });
    clock.advance(6_000);
    await p.useMembership({ workers: ["A"], domains });
    const candidate = p.claimCandidate(true);
    if (candidate === undefined) throw new Error("no claim");
    await p.useClaim({ version: 1, ...candidate });
    expect(p.routeOf("shop.example")).toBe("sole");
    const first = await p.acquire(req("shop.example"));
    expect(first.kind).toBe("granted");
    expect(await p.acquire(req("shop.example"))).toEqual({ kind: "denied", retryAfterMs: 15_000 });
  });

  it("leaves proxies of different exits independent", async () => {
    const p = make({ workerId: "A" });
    await p.useSnapshot(pair("198.51.100.10"));
    expect((await p.acquire(req("shop.example"))).kind).toBe("granted");
    expect((await p.acquire(req("shop.example"))).kind).toBe("granted");
  });
});

describe("snapshot file with exits", () => {
  it("keeps each proxy's exit, and reads a file written before exits as unknown", async () => {
    const file = join(dir, "pool.json");
    const snap = snapshot();
    await saveSnapshotFile(file, snap);
    expect(await loadSnapshotFile(file)).toEqual(snap);
    const old = { ...snap, proxies: snap.proxies.map(({ exitIp: _, ...rest }) => rest) };
    await writeFile(file, JSON.stringify({ version: 1, snapshot: old }));
    const loaded = await loadSnapshotFile(file);
    expect(loaded?.proxies.every((p) => p.exitIp === "")).toBe(true);
    await writeFile(file, JSON.stringify({ version: 1, snapshot: { ...snap, proxies: [{ ...snap.proxies[0], exitIp: 7 }] } }));
    expect(await loadSnapshotFile(file)).toBeUndefined();
  });
});
