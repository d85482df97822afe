/**
 * Isolation groups (G8) through real brokers over gRPC on a real Redis: policies set with
 * SetDomainPolicy, leases over the Lease stream, two replicas where a wake-up must cross them.
 */
import { afterEach, describe, expect, it } from "vitest";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { releaseSubscribers, startBroker, uniquePrefix, waitingAcquires } from "../../support/broker.js";
import type { TestBroker } from "../../support/broker.js";
import type { BrokerServerSettings } from "../../../src/server/broker-server.js";
import { withRedis } from "../../support/with-redis.js";
import { StreamClient, granted } from "../../support/stream-client.js";

const MARKETS = ["wildberries.example", "ozon.example", "avito.example"];

describe("isolation groups through the broker", () => {
  const redis = withRedis();
  const brokers: TestBroker[] = [];
  const streams: StreamClient[] = [];

  const start = async (opts: { replicas: number; proxies: number; settings?: Partial<BrokerServerSettings> }): Promise<TestBroker[]> => {
    const prefix = uniquePrefix();
    const started: TestBroker[] = [];
    for (let i = 0; i < opts.replicas; i++) {
      started.push(
        await startBroker({ kind: "redis", redisUrl: redis.url(), prefix, ...(opts.settings ? { settings: opts.settings } : {}) }),
      );
    }
    brokers.push(...started);
    const proxies = Array.from({ length: opts.proxies }, (_, i) => ({ url: `10.8.0.${i + 1}:8080` }));
    await started[0]!.admin.addProxies({ proxies });
    return started;
  };
  const group = async (b: TestBroker, patterns: readonly string[], name: string, affinityMs = 0): Promise<void> => {
    for (const pattern of patterns) {
      await b.admin.setDomainPolicy({
        policy: { pattern, isolationGroup: name, ...(affinityMs > 0 ? { affinityWindow: durationFromMs(affinityMs) } : {}) },
      });
    }
  };
  const open = (b: TestBroker) => {
    const s = new StreamClient(b.broker);
    streams.push(s);
    return s;
  };
  const proxyOf = (a: Awaited<ReturnType<StreamClient["acquire"]>>) => granted(a).proxy?.id ?? "";

  afterEach(async () => {
    for (const s of streams.splice(0)) s.cancel();
    await Promise.all(brokers.splice(0).map((b) => b.stop()));
  });

  it("gives each proxy to one platform of the group at a time, and every proxy is used", async () => {
    const [b] = await start({ replicas: 1, proxies: 6 });
    await group(b!, MARKETS, "market");
    const s = open(b!);
    const held = new Map<string, string>();
    for (let round = 0; round < 4; round++) {
      for (const domain of MARKETS) {
        const a = await s.acquire({ domain, workerId: "w" });
        if (a.case !== "granted") continue;
        const id = proxyOf(a);
        expect(held.has(id), `${id} is held for ${held.get(id)} and was granted for ${domain}`).toBe(false);
        held.set(id, domain);
      }
    }
    expect(held.size).toBe(6);
    // a domain outside the group still gets a proxy the group holds
    expect((await s.acquire({ domain: "news.example", workerId: "w" })).case).toBe("granted");
  });

  it("a release of one platform frees the proxy for the others at once, whatever the first one's interval", async () => {
    const [b] = await start({ replicas: 1, proxies: 1 });
    // the policies are set one by one, as an operator does: each is a policy change
    // an interval far longer than a loaded machine's round trip, and than the wait allowed
    for (const pattern of MARKETS) {
      await b!.admin.setDomainPolicy({ policy: { pattern, isolationGroup: "market", minInterval: durationFromMs(20_000) } });
    }
    const s = open(b!);
    const first = granted(await s.acquire({ domain: MARKETS[0]!, workerId: "w" }));
    await s.release(first.leaseId, first.fencingToken, OutcomeKind.SUCCESS);
    const t = Date.now();
    granted(await s.acquire({ domain: MARKETS[1]!, workerId: "w", maxWaitMs: 8_000 }));
    expect(Date.now() - t, "another platform waited for the first one's pacing").toBeLessThan(5_000);
  });

  it("a release of one platform wakes a waiter of another platform at once, on the same replica and on another", async () => {
    // a poll of 10 s: only the release can wake the waiter in time
    const [a, b] = await start({ replicas: 2, proxies: 1, settings: { waitPollMs: 10_000 } });
    await group(a!, MARKETS, "market");
    for (const [holderBroker, waiterBroker] of [
      [a!, a!],
      [a!, b!],
    ] as const) {
      const holder = open(holderBroker);
      const lease = granted(await holder.acquire({ domain: MARKETS[0]!, workerId: "w1" }));
      const waiting = open(waiterBroker).acquire({ domain: MARKETS[1]!, workerId: "w2", maxWaitMs: 5_000 });
      // the waiter queues up and its replica hears the group's releases (a's subscription lingers
      // from the first round): polled, as a loaded machine may take longer than any set time
      await expect.poll(() => waitingAcquires(waiterBroker.server), { timeout: 15_000, interval: 20 }).toBe(1);
      const subscribed = waiterBroker === holderBroker ? 1 : 2;
      await expect.poll(() => releaseSubscribers(redis.admin(), "#market"), { timeout: 15_000, interval: 20 }).toBe(subscribed);
      const sentAt = Date.now();
      await holder.release(lease.leaseId, lease.fencingToken, OutcomeKind.SUCCESS);
      const got = granted(await waiting);
      const ms = Date.now() - sentAt;
      // woken by the release: the grant says so (the 10 s poll comes after max_wait); this bound,
      // well under both, that it waited for neither
      expect(ms, `the waiter was granted ${ms} ms after the release`).toBeLessThan(3_000);
      await open(waiterBroker).release(got.leaseId, got.fencingToken, OutcomeKind.SUCCESS);
    }
  });

  it("a domain moved into the group is not granted a proxy another platform holds, nor gives one away", async () => {
    const [b] = await start({ replicas: 1, proxies: 1 });
    await group(b!, MARKETS.slice(0, 2), "market");
    const s = open(b!);
    // avito is in no group yet: it holds the one proxy
    const avito = granted(await s.acquire({ domain: MARKETS[2]!, workerId: "w" }));
    await group(b!, [MARKETS[2]!], "market");
    // its lease was granted under no group; the group's other platforms must still see it
    const denied = await s.acquire({ domain: MARKETS[0]!, workerId: "w" });
    expect(denied.case).toBe("denied");
    await s.release(avito.leaseId, avito.fencingToken, OutcomeKind.SUCCESS);
    const wb = granted(await s.acquire({ domain: MARKETS[0]!, workerId: "w" }));
    // and now avito, in the group, waits for wildberries
    expect((await s.acquire({ domain: MARKETS[2]!, workerId: "w" })).case).toBe("denied");
    await s.release(wb.leaseId, wb.fencingToken, OutcomeKind.SUCCESS);
  });

  it("holds the group after a wildcard whose hosts are their own keys joins it, for the longest TTL", async () => {
    // every lease of a second at most: the longest TTL the hold waits for
    const [b] = await start({ replicas: 1, proxies: 2, settings: { ttlDefaultMs: 1_000 } });
    await group(b!, [MARKETS[0]!], "market");
    const s = open(b!);
    // a lease on a subdomain under no group
    granted(await s.acquire({ domain: "shop.ozon-like.example", workerId: "w" }));
    await b!.admin.setDomainPolicy({ policy: { pattern: "*.ozon-like.example", isolationGroup: "market" } });
    // nobody can list the wildcard's keys: the group waits until that lease can no longer run
    const held = await s.acquire({ domain: MARKETS[0]!, workerId: "w" });
    expect(held.case).toBe("denied");
    const waited = Date.now();
    granted(await s.acquire({ domain: MARKETS[0]!, workerId: "w", maxWaitMs: 5_000 }));
    expect(Date.now() - waited).toBeGreaterThan(200);
    // a domain outside the group was never held
    expect((await s.acquire({ domain: "news.example", workerId: "w" })).case).toBe("granted");
  });

  it("a lease from before its key joined the group, renewed through a replica that serves no acquire, is seen by the group after the hold", async () => {
    const [a, b] = await start({ replicas: 2, proxies: 1, settings: { ttlDefaultMs: 1_000 } });
    await group(a!, [MARKETS[0]!], "market");
    // the long download's lease and its renewals go through b, which caches the policies now
    const s = open(b!);
    const lease = granted(await s.acquire({ domain: "shop.ozon-like.example", workerId: "w" }));
    // the change goes through a; b serves no acquire after it
    await a!.admin.setDomainPolicy({ policy: { pattern: "*.ozon-like.example", isolationGroup: "market" } });
    const other = open(a!);
    // past the group's hold after the change (the longest TTL, 1 s, + 3 s)
    const until = Date.now() + 5_000;
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, 250));
      expect((await s.renew(lease.leaseId, lease.fencingToken)).case, "the renewal").toBe("renewed");
      const got = await other.acquire({ domain: MARKETS[0]!, workerId: "w2" });
      expect(got.case, "wildberries was granted the proxy the ozon-like lease holds").toBe("denied");
    }
    await s.release(lease.leaseId, lease.fencingToken, OutcomeKind.SUCCESS);
  });
});
