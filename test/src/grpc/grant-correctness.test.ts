import { afterEach, describe, expect, it } from "vitest";
import { durationFromMs, durationMs } from "@bufbuild/protobuf/wkt";
import { OutcomeKind, PacingMode } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { waitingAcquires, type StoreKind } from "../../support/broker.js";
import { withBroker } from "../../support/with-broker.js";
import { StreamClient, granted } from "../../support/stream-client.js";

/** Grants that must be right whatever waits, filters or policy changes are around (both stores). */
describe.each<StoreKind>(["embedded", "redis"])("grant correctness (%s store)", (kind) => {
  const b = withBroker({ kind, each: true, settings: { waitPollMs: 5_000 } });
  const streams: StreamClient[] = [];
  const open = (): StreamClient => {
    const s = new StreamClient(b.broker);
    streams.push(s);
    return s;
  };

  afterEach(() => {
    for (const s of streams.splice(0)) s.cancel();
  });
  const start = async (proxies: number) => {
    const urls = Array.from({ length: proxies }, (_, i) => ({ url: `10.0.0.${i + 1}:8080` }));
    await b.admin.addProxies({ proxies: urls });
  };

  it("a sticky-session waiter for a busy proxy blocks neither max_wait 0 acquires nor plain waiters", async () => {
    await start(3);
    const s = open();
    const bound = granted(await s.acquire({ domain: "shop.example", sessionKey: "cart-1", ttlMs: 20_000 }));
    // the session waits for its own (busy) proxy
    const stickyWaiting = s.acquire({ domain: "shop.example", sessionKey: "cart-1", maxWaitMs: 10_000 });
    await expect.poll(() => waitingAcquires(b.server), { timeout: 15_000, interval: 20 }).toBe(1);
    // two proxies are free: a plain acquire without waiting is granted one of them
    const plain = granted(await s.acquire({ domain: "shop.example" }));
    expect(plain.proxy?.id).not.toBe(bound.proxy?.id);
    // a plain waiter behind the sticky one is granted the last free proxy at once
    const t0 = Date.now();
    const waiter = granted(await s.acquire({ domain: "shop.example", maxWaitMs: 10_000 }));
    // at once, not at the next 5 s poll: a bound far from that and from a loaded round trip
    expect(Date.now() - t0).toBeLessThan(2_500);
    expect(waiter.proxy?.id).not.toBe(bound.proxy?.id);
    // the session's proxy, when released, goes to the session (first come among those it can serve)
    await s.release(bound.leaseId, bound.fencingToken);
    const sticky = granted(await stickyWaiting);
    expect(sticky.proxy?.id).toBe(bound.proxy?.id);
  });

  it("many narrow waiters do not starve a plain waiter behind them", async () => {
    await start(12);
    const s = open();
    // each of 11 sessions holds its proxy and has a second request waiting for it
    const held = [];
    for (let i = 0; i < 11; i++) held.push(granted(await s.acquire({ domain: "shop.example", sessionKey: `s${i}`, ttlMs: 20_000 })));
    const sticky = held.map((_, i) => s.acquire({ domain: "shop.example", sessionKey: `s${i}`, maxWaitMs: 10_000 }));
    // one proxy is left: a plain acquire takes it
    const last = granted(await s.acquire({ domain: "shop.example" }));
    // a plain waiter queues behind the 11 narrow ones; a release of the plain lease frees one proxy
    const plainWaiting = s.acquire({ domain: "shop.example", maxWaitMs: 10_000 });
    await expect.poll(() => waitingAcquires(b.server), { timeout: 15_000, interval: 20 }).toBe(12);
    await s.release(last.leaseId, last.fencingToken);
    const plain = granted(await plainWaiting);
    expect(plain.proxy?.id).toBe(last.proxy?.id);
    for (const l of held) await s.release(l.leaseId, l.fencingToken);
    const answers = await Promise.all(sticky);
    expect(answers.every((a) => a.case === "granted")).toBe(true);
  });

  it("changing a policy's group never leaves two live leases on one proxy for one host", async () => {
    await start(1);
    const s = open();
    await b.admin.setDomainPolicy({ policy: { pattern: "*.example.com", group: "g1", minInterval: durationFromMs(300) } });
    const first = granted(await s.acquire({ domain: "a.example.com", ttlMs: 20_000 }));
    expect(first.domain).toBe("g1");
    await b.admin.setDomainPolicy({ policy: { pattern: "*.example.com", group: "g2", minInterval: durationFromMs(300) } });
    // the host's new key g2 must not get the proxy its old key g1 still holds
    const during = await s.acquire({ domain: "a.example.com" });
    expect(during.case).toBe("denied");
    // nor back to no group at all (each host its own key)
    await b.admin.setDomainPolicy({ policy: { pattern: "*.example.com", minInterval: durationFromMs(300) } });
    expect((await s.acquire({ domain: "a.example.com" })).case).toBe("denied");
    // the old lease ends; its pacing still holds, then the new key is granted
    const released = Date.now();
    await s.release(first.leaseId, first.fencingToken);
    const next = granted(await s.acquire({ domain: "a.example.com", maxWaitMs: 5_000 }));
    expect(next.domain).toBe("a.example.com");
    expect(Date.now() - released).toBeGreaterThanOrEqual(290);
  });

  it("a release carrying an absurd Retry-After applies whole and is clamped", async () => {
    await start(2);
    const lease = (await b.broker.acquireLease({ workerId: "w", domain: "shop.example" })).lease!;
    const r = await b.broker.releaseLease({
      leaseId: lease.leaseId,
      fencingToken: lease.fencingToken,
      outcome: { kind: OutcomeKind.RATE_LIMITED, httpStatus: 429, retryAfter: { seconds: 99_999_999_999_999_999n, nanos: 0 } },
    });
    expect(r.leaseId).toBe(lease.leaseId);
    const listed = await b.admin.listProxies({});
    const used = listed.proxies.find((p) => p.id === lease.proxy!.id)!;
    expect(used.failureCount).toBe(1n);
    // the pair is cooled for MAX_RETRY_AFTER_MS (a day), the other proxy still serves
    const other = (await b.broker.acquireLease({ workerId: "w", domain: "shop.example" })).lease!;
    expect(other.proxy!.id).not.toBe(lease.proxy!.id);
    await b.broker.releaseLease({ leaseId: other.leaseId, fencingToken: other.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } });
    const s = open();
    const denied = await s.acquire({ domain: "shop.example", sessionKey: "x" });
    if (denied.case === "granted") expect(denied.value.lease?.proxy?.id).toBe(other.proxy!.id);
  });

  it("GetDomainPacing shows a policy's interval and the interval adaptive pacing learned", async () => {
    await start(2);
    await b.admin.setDomainPolicy({
      policy: { pattern: "slow.example", minInterval: durationFromMs(400), pacing: PacingMode.AFTER_GRANT, jitter: durationFromMs(50) },
    });
    const policies = await b.admin.listDomainPolicies({});
    expect(policies.policies[0]).toMatchObject({ pattern: "slow.example", pacing: PacingMode.AFTER_GRANT });
    expect(durationMs(policies.policies[0]!.jitter!)).toBe(50);
    const lease = (await b.broker.acquireLease({ workerId: "w", domain: "free.example" })).lease!;
    await b.broker.releaseLease({
      leaseId: lease.leaseId,
      fencingToken: lease.fencingToken,
      outcome: { kind: OutcomeKind.RATE_LIMITED, httpStatus: 429 },
    });
    const all = await b.admin.getDomainPacing({});
    expect(all.domains.map((d) => [d.domain, durationMs(d.effectiveInterval!)])).toEqual([["free.example", 1_000]]);
    const asked = await b.admin.getDomainPacing({ domains: ["slow.example", "free.example", "other.example"] });
    expect(asked.domains.map((d) => [d.domain, d.policyPattern, durationMs(d.effectiveInterval!)])).toEqual([
      ["slow.example", "slow.example", 400],
      ["free.example", "", 1_000],
      ["other.example", "", 0],
    ]);
    const metrics = await b.server.metrics.registry.metrics();
    expect(metrics).toMatch(/proxybroker_domain_pacing_interval_seconds\{pool="default",domain="free.example"\} 1/);
  });
});
