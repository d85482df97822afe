/**
 * Internal to the conformance suite: G9 exit IPs. Proxies that leave from one exit IP are one IP
 * to a site: G1, G2, G8, bans and cool-downs hold per (exit, domain-key); a proxy that shares
 * its host waits for its first probe when the request does not grant unknown exits.
 *
 * The sibling proxies are sessions of one endpoint (`user@host:port`): a sharded pool keeps
 * them in one shard, where they can be siblings.
 */
import { describe, expect, it } from "vitest";
import type { AcquireParams, AcquireResult, LeaseView } from "@proxybroker/sdk/model";
import {
  acq,
  BAN_TTL,
  deny,
  grant,
  openStore,
  POOL,
  proxySpec,
  proxyView,
  release,
  TTL,
  type ConformanceOptions,
  type Harness,
  type StoreFactory,
  poolWide,
} from "./harness.js";

/** Two sessions of one gateway endpoint (one host, one shard). */
const A = "alpha@gw.example:7000";
const B = "beta@gw.example:7000";
/** A proxy on a host of its own. */
const C = "10.9.0.3:3128";
const EXIT_1 = "203.0.113.7";
const EXIT_2 = "203.0.113.8";
const HOUR = 3_600_000;
const OTHER = "other.example";

/** Add proxies with these ids (tier "datacenter" unless given). */
async function addIds(h: Harness, ids: readonly string[], tier = "datacenter"): Promise<void> {
  await h.store.addProxies(
    POOL,
    ids.map((id, i) => proxySpec(i, { id, tier })),
  );
}

/** A health check of `id` that saw `exitIp` through it. */
async function showExit(h: Harness, id: string, exitIp: string): Promise<void> {
  expect(await h.store.recordHealth(POOL, id, "pass", 0, exitIp), `recordHealth ${id}`).toBeDefined();
}

/** A, B on EXIT_1 and C on EXIT_2. */
async function gatewayPool(h: Harness): Promise<void> {
  await addIds(h, [A, B, C]);
  await showExit(h, A, EXIT_1);
  await showExit(h, B, EXIT_1);
  await showExit(h, C, EXIT_2);
}

function grants(results: readonly AcquireResult[]): LeaseView[] {
  return results.flatMap((r) => (r.kind === "granted" ? [r.lease] : []));
}

const on = (id: string, over: Partial<AcquireParams> = {}): AcquireParams => acq({ proxyId: id, ...over });

export function exitSuite(factory: StoreFactory, options: ConformanceOptions = {}): void {
  describe("G9 exit IPs", () => {
    it("records the exit a health check saw, and an exit change as an EXIT event", async () => {
      const h = await openStore(factory);
      await addIds(h, [A, C]);
      expect((await proxyView(h, A)).exitIp).toBe("");
      const view = await h.store.recordHealth(POOL, A, "pass", 0, EXIT_1);
      expect(view?.exitIp).toBe(EXIT_1);
      await showExit(h, A, EXIT_2);
      await h.store.recordHealth(POOL, A, "fail", 0, "");
      expect((await proxyView(h, A)).exitIp).toBe(EXIT_2);
      const { events } = await h.store.readEvents(POOL, "", { count: 10, blockMs: 0 });
      expect(events.filter((e) => e.kind === "EXIT").map((e) => [e.proxyId, e.detail])).toEqual([
        [A, `none -> ${EXIT_1}`],
        [A, `${EXIT_1} -> ${EXIT_2}`],
      ]);
      const audit = (await h.store.listAudit(10)).filter((e) => e.method === "exit-changed");
      expect(audit.map((e) => [e.pool, e.detail])).toEqual([
        [POOL, `${A} ${EXIT_1} -> ${EXIT_2}`],
        [POOL, `${A} none -> ${EXIT_1}`],
      ]);
    });

    it("two proxies of one exit never hold one domain-key at once (G1 per exit); other domains are free", async () => {
      const h = await openStore(factory);
      await gatewayPool(h);
      for (let round = 0; round < 5; round++) {
        const results = await Promise.all(Array.from({ length: 6 }, (_, i) => h.store.acquire(acq({ workerId: `w${i}` }))));
        const got = grants(results);
        expect(got.map((l) => l.proxy.id).sort(), `round ${round}`).toHaveLength(2);
        expect(
          got.filter((l) => l.proxy.id === A || l.proxy.id === B),
          `round ${round}`,
        ).toHaveLength(1);
        expect(
          got.filter((l) => l.proxy.id === C),
          `round ${round}`,
        ).toHaveLength(1);
        for (const r of results) if (r.kind === "denied") expect(r.retryAfterMs, `round ${round}`).toBe(TTL);
        const sibling = got.find((l) => l.proxy.id !== C)!.proxy.id === A ? B : A;
        expect(await deny(h, on(sibling))).toBe(TTL);
        const elsewhere = await grant(h, on(sibling, { domainKey: OTHER }));
        await Promise.all([...got, elsewhere].map((l) => release(h, l, "TARGET_ERROR")));
      }
    });

    it("different exits are independent", async () => {
      const h = await openStore(factory);
      await addIds(h, [A, B]);
      await showExit(h, A, EXIT_1);
      await showExit(h, B, EXIT_2);
      await grant(h, on(A));
      await grant(h, on(B));
    });

    it("after a lease of one ends, its sibling waits for the interval (G2 per exit)", async () => {
      const h = await openStore(factory);
      await gatewayPool(h);
      const paced = (id: string): AcquireParams => on(id, { minIntervalMs: 5_000 });
      const first = await grant(h, paced(A));
      h.clock.advance(1_000);
      await release(h, first, "SUCCESS");
      expect(await deny(h, paced(B))).toBe(5_000);
      h.clock.advance(4_999);
      expect(await deny(h, paced(B))).toBe(1);
      h.clock.advance(1);
      await grant(h, paced(B));
    });

    it("a ban through one proxy bans its exit for that domain-key only", async () => {
      const h = await openStore(factory);
      await gatewayPool(h);
      await release(h, await grant(h, on(A)), "BLOCKED");
      expect(await h.store.acquire(on(B))).toMatchObject({ kind: "denied" });
      const free = await grant(h, acq());
      expect(free.proxy.id).toBe(C);
      expect(await deny(h, acq())).toBe(TTL);
      await grant(h, on(B, { domainKey: OTHER }));
      h.clock.advance(BAN_TTL);
      await grant(h, on(B));
    });

    it("a cool-down through one proxy, or a reported ban, holds its siblings too", async () => {
      const h = await openStore(factory);
      await addIds(h, [A, B]);
      await showExit(h, A, EXIT_1);
      await showExit(h, B, EXIT_1);
      await release(h, await grant(h, on(A)), "RATE_LIMITED", { retryAfterMs: 2_000 });
      expect(await deny(h, acq())).toBe(2_000);
      h.clock.advance(2_000);
      await release(h, await grant(h, on(B)), "SUCCESS");
      const reported = { kind: "BLOCKED" as const, httpStatus: 403, latencyMs: 0, retryAfterMs: 0 };
      expect(await h.store.reportOutcomes(POOL, [{ proxyId: B, domainKey: OTHER, outcome: reported, banTtlMs: BAN_TTL }])).toBe(1);
      expect(await h.store.acquire(on(A, { domainKey: OTHER }))).toMatchObject({ kind: "denied" });
      await grant(h, on(A));
    });

    it("a key of an isolation group holds every proxy of the exit (G8 per exit)", async () => {
      const h = await openStore(factory);
      await gatewayPool(h);
      const grouped = (domainKey: string, over: Partial<AcquireParams> = {}): AcquireParams =>
        acq({ domainKey, isolation: { group: "m", affinityMs: 0, formerGroups: [] }, ...over });
      const held = await grant(h, grouped("k1.example", { proxyId: A }));
      expect(await deny(h, grouped("k2.example", { proxyId: B }))).toBe(TTL);
      expect((await grant(h, grouped("k2.example"))).proxy.id).toBe(C);
      await release(h, held, "TARGET_ERROR");
      await grant(h, grouped("k2.example", { proxyId: B }));
    });

    it("maxConcurrency counts the live leases of every proxy of the exit", async () => {
      const h = await openStore(factory);
      await addIds(h, [A, B]);
      await showExit(h, A, EXIT_1);
      await showExit(h, B, EXIT_1);
      const two = acq({ maxConcurrency: 2 });
      const first = await grant(h, two);
      await grant(h, two);
      expect(await deny(h, two)).toBe(TTL);
      expect(await deny(h, on(A, { maxConcurrency: 2 }))).toBe(TTL);
      expect(await deny(h, on(B, { maxConcurrency: 2 }))).toBe(TTL);
      await release(h, first, "TARGET_ERROR");
      await grant(h, two);
    });

    it("after an exit change the former exit still counts for an hour", async () => {
      const h = await openStore(factory);
      await addIds(h, [A, B]);
      await showExit(h, A, EXIT_1);
      await showExit(h, B, EXIT_1);
      await showExit(h, A, EXIT_2);
      const lease = await grant(h, on(A));
      expect(await deny(h, on(B))).toBe(TTL);
      await release(h, lease, "TARGET_ERROR");
      // both ways: the proxy that moved counts its former exit's members too
      const other = await grant(h, on(B));
      expect(await deny(h, on(A))).toBe(TTL);
      await release(h, other, "TARGET_ERROR");
      h.clock.advance(HOUR);
      await grant(h, on(A));
      await grant(h, on(B));
    });

    it("a proxy that shares its host waits for its first probe when unknown exits are not granted", async () => {
      const h = await openStore(factory);
      await addIds(h, [A, B]);
      const strict = acq({ grantUnknownExits: false });
      expect(await deny(h, strict)).toBe(-1);
      expect(await deny(h, on(B, { grantUnknownExits: false }))).toBe(-1);
      // a failed check is an answer through the proxy: it was probed, and showed no exit
      await h.store.recordHealth(POOL, A, "fail", 0, "");
      expect((await grant(h, strict)).proxy.id).toBe(A);
      expect(await deny(h, strict)).toBe(TTL);
      // an error is no answer
      await h.store.recordHealth(POOL, B, "error", 0, "");
      expect(await deny(h, strict)).toBe(TTL);
      // granted when the request allows unknown exits, and by default
      expect((await grant(h, acq({ grantUnknownExits: true }))).proxy.id).toBe(B);
      await grant(h, acq({ domainKey: OTHER }));
    });

    it("a proxy alone on its host is granted before any probe", async () => {
      const h = await openStore(factory);
      await addIds(h, [A, C]);
      const strict = (id: string): AcquireParams => on(id, { grantUnknownExits: false });
      await grant(h, strict(C));
      await release(h, await grant(h, strict(A)), "TARGET_ERROR");
      // a second proxy on its host: both wait for a probe; the last one left on it no longer does
      await addIds(h, [B]);
      expect(await deny(h, strict(A))).toBe(-1);
      expect(await deny(h, strict(B))).toBe(-1);
      await h.store.removeProxies(POOL, [B]);
      await grant(h, strict(A));
    });

    if (poolWide(options)) {
      it("a band topped by siblings held back still finds the free proxies below them", async () => {
        const h = await openStore(factory);
        // 150 sessions of one exit, checked (score 53), above 30 proxies of their own (50)
        const sessions = Array.from({ length: 150 }, (_, i) => `s${i}@gw.example:7000`);
        await addIds(h, sessions);
        for (const id of sessions) await showExit(h, id, EXIT_1);
        await addIds(
          h,
          Array.from({ length: 30 }, (_, i) => `10.7.0.${i + 1}:3128`),
        );
        // one session, then every other proxy: none denied while one is free
        for (let i = 0; i < 31; i++) await grant(h, acq({ workerId: `w${i}` }));
        expect(await deny(h, acq())).toBe(TTL);
      });

      it("ports of one host share it", async () => {
        const h = await openStore(factory);
        await addIds(h, ["gw.example:7001", "gw.example:7002", "[2001:db8::1]:7001", "[2001:db8::2]:7001"]);
        const strict = (id: string): AcquireParams => on(id, { grantUnknownExits: false });
        expect(await deny(h, strict("gw.example:7001"))).toBe(-1);
        expect(await deny(h, strict("gw.example:7002"))).toBe(-1);
        await grant(h, strict("[2001:db8::1]:7001"));
        await grant(h, strict("[2001:db8::2]:7001"));
      });
    }

    // a session's first grant is tried on its rendezvous shard alone in a sharded pool
    // (docs/sharding.md), which may hold none of the tier: these run where the pool is one
    if (poolWide(options)) {
      it("a session whose proxy's sibling is busy waits instead of switching", async () => {
        const h = await openStore(factory);
        await addIds(h, [A, B], "gateway");
        await addIds(h, [C]);
        await showExit(h, A, EXIT_1);
        await showExit(h, B, EXIT_1);
        await showExit(h, C, EXIT_2);
        const session = (over: Partial<AcquireParams> = {}): AcquireParams => acq({ sessionKey: "cart-9", ...over });
        const first = await grant(h, session({ tier: "gateway" }));
        await release(h, first, "TARGET_ERROR");
        const sibling = first.proxy.id === A ? B : A;
        await grant(h, on(sibling, { workerId: "other" }));
        expect(await deny(h, session())).toBe(TTL);
      });

      it("a session whose proxy's sibling is banned for the domain-key rebinds", async () => {
        const h = await openStore(factory);
        await addIds(h, [A, B], "gateway");
        await addIds(h, [C]);
        await showExit(h, A, EXIT_1);
        await showExit(h, B, EXIT_1);
        await showExit(h, C, EXIT_2);
        const session = acq({ sessionKey: "cart-9" });
        const first = await grant(h, acq({ sessionKey: "cart-9", tier: "gateway" }));
        await release(h, first, "TARGET_ERROR");
        const sibling = first.proxy.id === A ? B : A;
        await release(h, await grant(h, on(sibling, { workerId: "other" })), "BLOCKED");
        const rebound = await grant(h, session);
        expect(rebound).toMatchObject({ sessionRebound: true });
        expect(rebound.proxy.id).toBe(C);
      });
    }
  });
}
