import { afterEach, describe, expect, it } from "vitest";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { startBroker, uniquePrefix } from "../../support/broker.js";
import type { StoreKind, TestBroker } from "../../support/broker.js";
import { withRedis } from "../../support/with-redis.js";
import { withBroker } from "../../support/with-broker.js";
import { StreamClient, granted } from "../../support/stream-client.js";

const DOMAIN = "shop.example.com";

/** The lease ids a stream was asked for back (LeaseWanted), in order. */
function wantedOn(s: StreamClient): string[] {
  return s.received.flatMap((a) => (a.case === "wanted" ? [a.value.leaseId] : []));
}

/**
 * A policy for every host that sets no interval: the operator says the sites are not paced, so
 * their unpaced grants may be reusable (a host no policy names is not known to be unpaced).
 */
const UNPACED = { policy: { pattern: "*" } } as const;

/**
 * Kept leases over real gRPC on a real broker (docs/spec.md §7): a lease acquired with `reuse` on
 * the Lease stream comes back reusable when its pair is known not to be paced (a policy applies
 * and sets no interval), and the broker asks for it back (LeaseWanted, unasked on the stream that
 * holds it) when another acquire needs its key, a RATE_LIMITED outcome came for the key, or the
 * pool's policies changed.
 */
describe.each<StoreKind>(["embedded", "redis"])("kept leases (%s store)", (kind) => {
  // a long poll: a waiting acquire is granted within the test by a release's wake-up only
  const b = withBroker({ kind, each: true, settings: { waitPollMs: 10_000 } });
  const streams: StreamClient[] = [];
  const open = () => {
    const s = new StreamClient(b.broker);
    streams.push(s);
    return s;
  };
  /** `proxies` proxies, and the policy that says every host is unpaced unless `configured` is false. */
  const start = async (proxies: number, { configured = true } = {}) => {
    const urls = Array.from({ length: proxies }, (_, i) => ({ url: `10.0.0.${i + 1}:8080` }));
    const r = await b.admin.addProxies({ proxies: urls });
    expect(r.added).toHaveLength(proxies);
    if (configured) await b.admin.setDomainPolicy(UNPACED);
  };
  afterEach(() => {
    for (const s of streams.splice(0)) s.cancel();
  });

  it("grants reusable on an unpaced key only when asked to reuse", async () => {
    await start(2);
    const s = open();
    const kept = granted(await s.acquire({ domain: DOMAIN, reuse: true }));
    expect(kept.reusable).toBe(true);
    const plain = granted(await s.acquire({ domain: DOMAIN }));
    expect(plain.reusable).toBe(false);
    expect(plain.proxy?.id).not.toBe(kept.proxy?.id);
  });

  it("does not grant reusable on a host no policy names: its pacing is not known, adaptive pacing may still learn it", async () => {
    await start(2, { configured: false });
    const s = open();
    const first = granted(await s.acquire({ domain: DOMAIN, reuse: true }));
    expect(first.reusable).toBe(false);
    // nor the next lease of a release with next
    const r = await s.release(first.leaseId, first.fencingToken, OutcomeKind.SUCCESS, { domain: DOMAIN, reuse: true });
    if (r.case !== "released" || r.value.next.case !== "granted") throw new Error(`expected released with a next grant: ${r.case}`);
    expect(r.value.next.value.lease?.reusable).toBe(false);
    // and such a lease is never asked back: another acquire of the key is simply granted or denied
    const other = open();
    expect((await other.acquire({ domain: DOMAIN, workerId: "other" })).case).toBe("granted");
    expect((await other.acquire({ domain: DOMAIN, workerId: "other" })).case).toBe("denied");
    expect((await s.acquire({ domain: "other.example.org" })).case).toBe("granted");
    expect(wantedOn(s)).toEqual([]);
    // a policy that names the host and sets no interval: the operator says it is not paced
    await b.admin.setDomainPolicy({ policy: { pattern: "*.example.net" } });
    expect(granted(await s.acquire({ domain: "shop.example.net", reuse: true })).reusable).toBe(true);
    expect(granted(await s.acquire({ domain: "shop.example.org", reuse: true })).reusable).toBe(false);
  });

  it("does not grant reusable on a key paced by its policy's min_interval", async () => {
    await start(2);
    await b.admin.setDomainPolicy({ policy: { pattern: "*.paced.example", minInterval: durationFromMs(300) } });
    const s = open();
    const paced = granted(await s.acquire({ domain: "a.paced.example", reuse: true }));
    expect(paced.reusable).toBe(false);
    // the same stream, an unpaced key: reusable
    expect(granted(await s.acquire({ domain: DOMAIN, reuse: true })).reusable).toBe(true);
  });

  it("never grants reusable through unary AcquireLease (no stream to ask it back on)", async () => {
    await start(1);
    const r = await b.broker.acquireLease({ workerId: "unary", domain: DOMAIN, reuse: true });
    expect(r.lease?.leaseId).toBeTruthy();
    expect(r.lease?.reusable).toBe(false);
  });

  it("asks the holder back when another acquire of the key is denied; once released it is granted", async () => {
    await start(1);
    const a = open();
    const kept = granted(await a.acquire({ domain: DOMAIN, reuse: true, workerId: "a" }));
    expect(kept.reusable).toBe(true);
    expect(wantedOn(a)).toEqual([]);
    const bStream = open();
    expect((await bStream.acquire({ domain: DOMAIN, workerId: "b", maxWaitMs: 0 })).case).toBe("denied");
    await expect.poll(() => wantedOn(a), { timeout: 15_000, interval: 20 }).toEqual([kept.leaseId]);
    expect(wantedOn(bStream)).toEqual([]);
    // asked once: another denial does not ask again
    expect((await bStream.acquire({ domain: DOMAIN, workerId: "b", maxWaitMs: 0 })).case).toBe("denied");
    expect((await a.renew(kept.leaseId, kept.fencingToken)).case).toBe("renewed");
    expect(wantedOn(a)).toEqual([kept.leaseId]);
    expect((await a.release(kept.leaseId, kept.fencingToken)).case).toBe("released");
    const next = granted(await bStream.acquire({ domain: DOMAIN, workerId: "b", maxWaitMs: 0 }));
    expect(next.proxy?.id).toBe(kept.proxy?.id);
  });

  it("a waiting acquire asks the holder back and is granted as soon as it gives the lease back", async () => {
    await start(1);
    const a = open();
    const kept = granted(await a.acquire({ domain: DOMAIN, reuse: true, workerId: "a" }));
    expect(kept.reusable).toBe(true);
    // max_wait 8 s, the poll 10 s: only the holder's give-back can grant it. The bounds below are
    // well under max_wait, and far from what a loaded machine's round trips take
    const t0 = Date.now();
    const waiting = open().acquire({ domain: DOMAIN, workerId: "b", maxWaitMs: 8_000 });
    await expect.poll(() => wantedOn(a), { timeout: 7_000, interval: 5 }).toEqual([kept.leaseId]);
    const askedAfter = Date.now() - t0;
    const releasedAt = Date.now();
    expect((await a.release(kept.leaseId, kept.fencingToken)).case).toBe("released");
    const got = granted(await waiting);
    const grantedAfterRelease = Date.now() - releasedAt;
    expect(got.proxy?.id).toBe(kept.proxy?.id);
    expect(askedAfter).toBeLessThan(4_000);
    expect(grantedAfterRelease).toBeLessThan(3_000);
    expect(Date.now() - t0).toBeLessThan(6_000); // well under max_wait
  });

  it("an acquire denied by a reusable lease whose grant is still on its way: the lease comes back not reusable", async () => {
    await start(1);
    const s = open();
    for (let i = 0; i < 10; i++) {
      const domain = `race${i}.example.com`;
      // both decided at once: the second is denied by the first's grant
      const [first, second] = await Promise.all([s.acquire({ domain, reuse: true }), s.acquire({ domain, workerId: "second" })]);
      const l = granted(first);
      expect(second.case).toBe("denied");
      await s.renew(l.leaseId, l.fencingToken); // a LeaseWanted sent for it came before this answer
      // either it is not reusable, or its holder was asked for it back
      if (l.reusable) expect(wantedOn(s)).toContain(l.leaseId);
      expect((await s.release(l.leaseId, l.fencingToken)).case).toBe("released");
    }
  });

  it("a RATE_LIMITED release of a reusable lease asks back the other reusable leases of the key", async () => {
    await start(4);
    const a = open();
    const c = open();
    const first = granted(await a.acquire({ domain: DOMAIN, reuse: true, workerId: "a" }));
    const second = granted(await c.acquire({ domain: DOMAIN, reuse: true, workerId: "c" }));
    const third = granted(await a.acquire({ domain: DOMAIN, reuse: true, workerId: "a" }));
    const otherKey = granted(await c.acquire({ domain: "news.example.org", reuse: true, workerId: "c" }));
    for (const l of [first, second, third, otherKey]) expect(l.reusable).toBe(true);
    expect((await a.release(first.leaseId, first.fencingToken, OutcomeKind.RATE_LIMITED)).case).toBe("released");
    await expect.poll(() => wantedOn(c), { timeout: 15_000, interval: 20 }).toEqual([second.leaseId]);
    await expect.poll(() => wantedOn(a), { timeout: 15_000, interval: 20 }).toContain(third.leaseId);
    // the released lease itself is not asked back, nor a lease of another key
    expect(wantedOn(a)).toEqual([third.leaseId]);
    expect(wantedOn(c)).not.toContain(otherKey.leaseId);
  });

  it("a retried acquire given its reusable lease again: not reusable, and never asked back once released", async () => {
    await start(1);
    const s = open();
    const first = granted(await s.acquire({ domain: DOMAIN, reuse: true, requestId: "kept-retry" }));
    expect(first.reusable).toBe(true);
    const again = granted(await s.acquire({ domain: DOMAIN, reuse: true, requestId: "kept-retry" }));
    expect(again.leaseId).toBe(first.leaseId);
    expect(again.reusable).toBe(false); // its interval is not known again
    expect((await s.release(first.leaseId, first.fencingToken)).case).toBe("released");
    // the proxy held by another, a third denied: nothing asks the released lease back
    const holder = open();
    expect(granted(await holder.acquire({ domain: DOMAIN, workerId: "holder" })).reusable).toBe(false);
    const denied = open();
    expect((await denied.acquire({ domain: DOMAIN, workerId: "denied" })).case).toBe("denied");
    // a round trip on s after the denial: a LeaseWanted sent by it came before
    expect((await s.acquire({ domain: "other.example.org" })).case).toBe("granted");
    expect(wantedOn(s)).toEqual([]);
  });

  it("a RATE_LIMITED outcome reported (ReportOutcomes) asks back the reusable leases of its key", async () => {
    await start(2);
    const a = open();
    const kept = granted(await a.acquire({ domain: DOMAIN, reuse: true, workerId: "a" }));
    expect(kept.reusable).toBe(true);
    const other = kept.proxy?.id === "10.0.0.1:8080" ? "10.0.0.2:8080" : "10.0.0.1:8080";
    await b.broker.reportOutcomes({
      pool: "default",
      workerId: "reporter",
      outcomes: [{ proxyId: other, domain: DOMAIN, outcome: { kind: OutcomeKind.RATE_LIMITED, httpStatus: 429 } }],
    });
    await expect.poll(() => wantedOn(a), { timeout: 15_000, interval: 20 }).toEqual([kept.leaseId]);
  });

  it("SetDomainPolicy and DeleteDomainPolicy ask back the pool's reusable leases", async () => {
    await start(3);
    const a = open();
    const one = granted(await a.acquire({ domain: DOMAIN, reuse: true }));
    const two = granted(await a.acquire({ domain: "news.example.org", reuse: true }));
    const plain = granted(await a.acquire({ domain: DOMAIN }));
    expect([one.reusable, two.reusable, plain.reusable]).toEqual([true, true, false]);
    await b.admin.setDomainPolicy({ policy: { pattern: "*.unrelated.example", maxConcurrency: 2 } });
    await expect.poll(() => wantedOn(a).sort(), { timeout: 15_000, interval: 20 }).toEqual([one.leaseId, two.leaseId].sort());
    // leases granted after that are asked back by a deletion
    const three = granted(await a.acquire({ domain: "third.example.net", reuse: true }));
    expect(three.reusable).toBe(true);
    await b.admin.deleteDomainPolicy({ pattern: "*.unrelated.example" });
    await expect.poll(() => wantedOn(a).length, { timeout: 15_000, interval: 20 }).toBe(3);
    expect(wantedOn(a)).toEqual(expect.arrayContaining([one.leaseId, two.leaseId, three.leaseId]));
    expect(wantedOn(a)).not.toContain(plain.leaseId);
  });

  it("release with next and reuse grants the next lease reusable too", async () => {
    await start(2);
    const s = open();
    const l = granted(await s.acquire({ domain: DOMAIN, reuse: true }));
    const r = await s.release(l.leaseId, l.fencingToken, OutcomeKind.SUCCESS, { domain: DOMAIN, reuse: true });
    if (r.case !== "released" || r.value.next.case !== "granted") throw new Error(`expected released with a next grant: ${r.case}`);
    const next = r.value.next.value.lease;
    expect(next?.reusable).toBe(true);
    // and it is asked back like any reusable lease
    expect((await open().acquire({ domain: DOMAIN, workerId: "other" })).case).toBe("granted");
    expect((await open().acquire({ domain: DOMAIN, workerId: "other" })).case).toBe("denied");
    await expect.poll(() => wantedOn(s), { timeout: 15_000, interval: 20 }).toEqual([next?.leaseId]);
    // without reuse it is not
    const n2 = await s.release(next!.leaseId, next!.fencingToken, OutcomeKind.SUCCESS, { domain: DOMAIN });
    if (n2.case !== "released" || n2.value.next.case !== "granted") throw new Error(`expected released with a next grant: ${n2.case}`);
    expect(n2.value.next.value.lease?.reusable).toBe(false);
  });
});

/** Two broker replicas on one Redis (one key prefix): a policy change through one reaches the other's holders. */
describe("kept leases across replicas", () => {
  const redis = withRedis();
  const brokers: TestBroker[] = [];
  const streams: StreamClient[] = [];
  afterEach(async () => {
    for (const s of streams.splice(0)) s.cancel();
    await Promise.all(brokers.splice(0).map((x) => x.stop()));
  });

  it("a policy set through another replica asks back the reusable leases held here (its refresh)", async () => {
    const prefix = uniquePrefix();
    const here = await startBroker({ kind: "redis", redisUrl: redis.url(), prefix });
    const there = await startBroker({ kind: "redis", redisUrl: redis.url(), prefix });
    brokers.push(here, there);
    await here.admin.addProxies({ proxies: [{ url: "10.0.1.1:8080" }, { url: "10.0.1.2:8080" }] });
    await here.admin.setDomainPolicy(UNPACED);
    const s = new StreamClient(here.broker);
    streams.push(s);
    const kept = granted(await s.acquire({ domain: DOMAIN, reuse: true }));
    const plain = granted(await s.acquire({ domain: DOMAIN }));
    expect([kept.reusable, plain.reusable]).toEqual([true, false]);
    await there.admin.setDomainPolicy({ policy: { pattern: "*.elsewhere.example", maxConcurrency: 2 } });
    // refreshHolds runs every second
    await expect.poll(() => wantedOn(s), { timeout: 15_000, interval: 50 }).toEqual([kept.leaseId]);
  });
});

describe("kept leases: an acquire without max_wait", () => {
  // KEPT_GIVE_BACK_WAIT_MS is 200 ms by default; 10 s here (a loaded machine may take seconds to
  // hand the lease back in this test): what is checked is that it waits at all, and that the
  // give-back, not the end of that wait, grants it
  const b = withBroker({ kind: "embedded", each: true, settings: { keptGiveBackWaitMs: 10_000 } });
  const streams: StreamClient[] = [];
  afterEach(() => {
    for (const s of streams.splice(0)) s.cancel();
  });

  it("an acquire without max_wait waits briefly for a kept lease given back at once, and gets it", async () => {
    await b.admin.addProxies({ proxies: [{ url: "10.0.0.1:8080" }] });
    await b.admin.setDomainPolicy(UNPACED);
    const a = new StreamClient(b.broker);
    const other = new StreamClient(b.broker);
    streams.push(a, other);
    const kept = granted(await a.acquire({ domain: DOMAIN, reuse: true, workerId: "a" }));
    expect(kept.reusable).toBe(true);
    const t0 = Date.now();
    const asking = other.acquire({ domain: DOMAIN, workerId: "b", maxWaitMs: 0 });
    // the holder is idle: it gives the lease back as soon as it is asked (as the gateway does)
    await expect.poll(() => wantedOn(a), { timeout: 8_000, interval: 2 }).toEqual([kept.leaseId]);
    expect((await a.release(kept.leaseId, kept.fencingToken)).case).toBe("released");
    const got = granted(await asking);
    expect(got.proxy?.id).toBe(kept.proxy?.id);
    expect(Date.now() - t0).toBeLessThan(5_000); // given back, not the 10 s wait run out
  });

  it("so does the next lease of a release with next and no max_wait", async () => {
    await b.admin.addProxies({ proxies: [{ url: "10.0.0.1:8080" }] });
    await b.admin.setDomainPolicy(UNPACED);
    const a = new StreamClient(b.broker);
    const other = new StreamClient(b.broker);
    streams.push(a, other);
    const kept = granted(await a.acquire({ domain: DOMAIN, reuse: true, workerId: "a" }));
    // the same proxy, another domain-key: released with next for the kept lease's key
    const elsewhere = granted(await other.acquire({ domain: "elsewhere.example", workerId: "b" }));
    const releasing = other.release(elsewhere.leaseId, elsewhere.fencingToken, OutcomeKind.SUCCESS, {
      domain: DOMAIN,
      workerId: "b",
    });
    await expect.poll(() => wantedOn(a), { timeout: 8_000, interval: 2 }).toEqual([kept.leaseId]);
    expect((await a.release(kept.leaseId, kept.fencingToken)).case).toBe("released");
    const answer = await releasing;
    expect(answer.case).toBe("released");
    const next = answer.case === "released" ? answer.value.next : undefined;
    expect(next?.case).toBe("granted");
    expect(next?.case === "granted" ? next.value.lease?.proxy?.id : undefined).toBe(kept.proxy?.id);
  });
});
