import { afterEach, describe, expect, it } from "vitest";
import { DenyReason, LostReason, OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { durationFromMs, durationMs } from "@bufbuild/protobuf/wkt";
import type { StoreKind } from "../../support/broker.js";
import { waitingAcquires } from "../../support/broker.js";
import { withBroker } from "../../support/with-broker.js";
import { StreamClient, granted } from "../../support/stream-client.js";

/** The Lease stream over real gRPC, on both stores. */
describe.each<StoreKind>(["embedded", "redis"])("Lease stream (%s store)", (kind) => {
  const b = withBroker({ kind, each: true });
  const streams: StreamClient[] = [];
  const open = () => {
    const s = new StreamClient(b.broker);
    streams.push(s);
    return s;
  };

  const start = async (proxies: number, settings?: { waitPollMs: number }) => {
    if (settings !== undefined) await b.restart(settings);
    const urls = Array.from({ length: proxies }, (_, i) => ({ url: `10.0.0.${i + 1}:8080` }));
    const r = await b.admin.addProxies({ proxies: urls });
    expect(r.added).toHaveLength(proxies);
  };
  afterEach(() => {
    for (const s of streams.splice(0)) s.cancel();
  });

  it("multiplexes acquires, renews and releases on one stream and answers each in-band", async () => {
    await start(3);
    const s = open();
    const answers = await Promise.all([1, 2, 3, 4].map(() => s.acquire({ domain: "shop.example.com" })));
    const grants = answers.filter((a) => a.case === "granted");
    const denials = answers.filter((a) => a.case === "denied");
    expect(grants).toHaveLength(3);
    expect(denials).toHaveLength(1);
    const denied = denials[0]!;
    if (denied.case !== "denied") throw new Error("unreachable");
    expect(denied.value.reason).toBe(DenyReason.NO_PROXY_AVAILABLE);
    expect(denied.value.retryAfter).toBeDefined();
    const retryMs = durationMs(denied.value.retryAfter!);
    expect(retryMs).toBeGreaterThan(25_000); // the earliest expiry of the 30 s leases
    expect(retryMs).toBeLessThanOrEqual(30_000);

    const leases = grants.map(granted);
    expect(new Set(leases.map((l) => l.proxy?.id)).size).toBe(3);
    const renewed = await s.renew(leases[0]!.leaseId, leases[0]!.fencingToken, 60_000);
    expect(renewed.case).toBe("renewed");
    const released = await s.release(leases[1]!.leaseId, leases[1]!.fencingToken);
    expect(released.case).toBe("released");
    const again = granted(await s.acquire({ domain: "shop.example.com" }));
    expect(again.proxy?.id).toBe(leases[1]!.proxy?.id);
    expect(again.fencingToken).toBeGreaterThan(leases[1]!.fencingToken);
  });

  it("answers LeaseLost in-band for a wrong token, an unknown id and a released lease, and stays open", async () => {
    await start(1);
    const s = open();
    const l = granted(await s.acquire({ domain: "a.example" }));
    const wrong = await s.renew(l.leaseId, l.fencingToken + 5n);
    expect(wrong.case === "lost" && wrong.value.reason).toBe(LostReason.REVOKED);
    const unknown = await s.renew("no-such-lease", 1n);
    expect(unknown.case === "lost" && unknown.value.reason).toBe(LostReason.NOT_FOUND);
    expect((await s.release(l.leaseId, l.fencingToken)).case).toBe("released");
    const afterRelease = await s.renew(l.leaseId, l.fencingToken);
    expect(afterRelease.case === "lost" && afterRelease.value.reason).toBe(LostReason.NOT_FOUND);
    expect((await s.acquire({ domain: "a.example" })).case).toBe("granted");
  });

  it("answers an expired lease with LeaseLost EXPIRED (real short TTL)", async () => {
    await start(1);
    const s = open();
    const l = granted(await s.acquire({ domain: "a.example", ttlMs: 100 }));
    await new Promise((r) => setTimeout(r, 180));
    const lost = await s.renew(l.leaseId, l.fencingToken);
    expect(lost.case === "lost" && lost.value.reason).toBe(LostReason.EXPIRED);
    const other = granted(await open().acquire({ domain: "a.example" }));
    expect(other.proxy?.id).toBe(l.proxy?.id);
  });

  it("keeps a lease past 3× its TTL with heartbeats while others are denied", async () => {
    await start(1);
    const s = open();
    // a TTL that leaves a loaded machine's timers and round trips (a renewal and an acquire a
    // beat) room: three quarters of it between one renewal's answer and the next renewal
    const ttl = 1_000;
    const l = granted(await s.acquire({ domain: "a.example", ttlMs: ttl }));
    const other = open();
    const endAt = Date.now() + 3.5 * ttl;
    while (Date.now() < endAt) {
      await new Promise((r) => setTimeout(r, ttl / 4));
      expect((await s.renew(l.leaseId, l.fencingToken)).case).toBe("renewed");
      expect((await other.acquire({ domain: "a.example" })).case).toBe("denied");
    }
    expect((await s.release(l.leaseId, l.fencingToken)).case).toBe("released");
  });

  it("does not end leases when the stream breaks: another stream renews and releases them", async () => {
    await start(2);
    const first = open();
    const l = granted(await first.acquire({ domain: "a.example" }));
    first.cancel();
    await new Promise((r) => setTimeout(r, 50));
    const second = open();
    expect((await second.acquire({ domain: "a.example" })).case).toBe("granted"); // the other proxy
    expect((await second.acquire({ domain: "a.example" })).case).toBe("denied"); // l still holds its proxy
    expect((await second.renew(l.leaseId, l.fencingToken)).case).toBe("renewed");
    expect((await second.release(l.leaseId, l.fencingToken)).case).toBe("released");
  });

  it("grants a waiting acquire (max_wait) as soon as a lease is released, first come first served", async () => {
    await start(1, { waitPollMs: 10_000 }); // only the release's wake-up can grant within the test

    const s = open();
    const l = granted(await s.acquire({ domain: "a.example" }));
    // w1 waits before w2 asks, on streams of their own: the broker's count of waiters says when
    const w1 = open().acquire({ domain: "a.example", maxWaitMs: 5_000, workerId: "w1" });
    await expect.poll(() => waitingAcquires(b.server), { timeout: 15_000, interval: 20 }).toBe(1);
    const w2 = open().acquire({ domain: "a.example", maxWaitMs: 5_000, workerId: "w2" });
    await expect.poll(() => waitingAcquires(b.server), { timeout: 15_000, interval: 20 }).toBe(2);
    const t0 = Date.now();
    await s.release(l.leaseId, l.fencingToken);
    const first = granted(await w1);
    // woken by the release: the grant itself says so (the 10 s poll comes after max_wait), and
    // this bound, far from both, that it did not wait for either
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(first.proxy?.id).toBe(l.proxy?.id);
    let w2Done = false;
    void w2.then(() => (w2Done = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(w2Done).toBe(false); // still waiting: the proxy is held by w1
    const other = streams[streams.length - 2]!;
    await other.release(first.leaseId, first.fencingToken);
    expect(granted(await w2).proxy?.id).toBe(l.proxy?.id);
  });

  it("denies a waiting acquire when max_wait passes, with retry_after", async () => {
    await start(1);
    await open().acquire({ domain: "a.example" });
    const t0 = Date.now();
    const a = await open().acquire({ domain: "a.example", maxWaitMs: 200 });
    const waited = Date.now() - t0;
    expect(a.case).toBe("denied");
    expect(waited).toBeGreaterThanOrEqual(190);
    // at max_wait, not at the lease's expiry (30 s): a bound a loaded machine's round trip stays under
    expect(waited).toBeLessThan(5_000);
  });

  it("releases and acquires the next lease in one message", async () => {
    await start(2);
    const s = open();
    const l = granted(await s.acquire({ domain: "a.example" }));
    const r = await s.release(l.leaseId, l.fencingToken, OutcomeKind.SUCCESS, { domain: "b.example" });
    expect(r.case).toBe("released");
    if (r.case !== "released") throw new Error("unreachable");
    expect(r.value.next.case).toBe("granted");
    if (r.value.next.case !== "granted") throw new Error("unreachable");
    expect(r.value.next.value.lease?.domain).toBe("b.example");
  });

  it("paces grants of one proxy for a domain by the policy's min_interval", async () => {
    await start(1);
    await b.admin.setDomainPolicy({ policy: { pattern: "*.paced.example", group: "paced", minInterval: durationFromMs(200) } });
    const s = open();
    const grantTimes: number[] = [];
    for (let i = 0; i < 3; i++) {
      const l = granted(await s.acquire({ domain: `x${i}.paced.example`, maxWaitMs: 2_000 }));
      grantTimes.push(Date.now());
      expect(l.domain).toBe("paced");
      await s.release(l.leaseId, l.fencingToken);
    }
    expect(grantTimes[1]! - grantTimes[0]!).toBeGreaterThanOrEqual(190);
    expect(grantTimes[2]! - grantTimes[1]!).toBeGreaterThanOrEqual(190);
  });

  it("answers bad input in-band with INVALID_ARGUMENT and keeps the stream open", async () => {
    await start(1);
    const s = open();
    for (const bad of [{ domain: "not a domain" }, { targetUrl: "ftp://x.example/" }, { domain: "a.example", ttlMs: 10 }, {}]) {
      const a = await s.acquire(bad);
      expect(a.case).toBe("denied");
      if (a.case !== "denied") throw new Error("unreachable");
      expect(a.value.reason).toBe(DenyReason.INVALID_ARGUMENT);
      expect(a.value.message.length).toBeGreaterThan(5);
    }
    expect((await s.acquire({ targetUrl: "https://Shop.Example.com:8443/x?y" })).case).toBe("granted");
  });
});
