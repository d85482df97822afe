import { beforeAll, describe, expect, it } from "vitest";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { StoreKind } from "../../support/broker.js";
import { withBroker } from "../../support/with-broker.js";
import { StreamClient, granted } from "../../support/stream-client.js";

interface Hold {
  readonly key: string;
  readonly token: bigint;
  readonly from: number;
  readonly to: number;
}

/**
 * G1 end to end: 60 concurrent workers on their own streams, real gRPC and a real store, hammer 5
 * proxies over 2 domains with max_wait. Holding intervals are measured on the client (grant
 * received → release sent), which lie inside the broker's, so any overlap seen here is real.
 */
describe.each<StoreKind>(["embedded", "redis", "cluster"])("exclusivity under concurrency (%s store)", (kind) => {
  const b = withBroker({ kind });

  beforeAll(async () => {
    await b.admin.addProxies({ proxies: [1, 2, 3, 4, 5].map((i) => ({ url: `10.2.0.${i}:8080` })) });
  });

  it("never holds two leases on one (proxy, domain-key) at once; tokens increase per pair", async () => {
    const holds: Hold[] = [];
    const workers = Array.from({ length: 60 }, async (_, w) => {
      const s = new StreamClient(b.broker);
      for (let i = 0; i < 6; i++) {
        const domain = (w + i) % 2 === 0 ? "one.example" : "two.example";
        const l = granted(await s.acquire({ domain, maxWaitMs: 20_000, workerId: `w${w}` }));
        const from = performance.now();
        await new Promise((r) => setTimeout(r, 2 + ((w * 7 + i) % 5)));
        const to = performance.now();
        holds.push({ key: `${l.proxy!.id}|${l.domain}`, token: l.fencingToken, from, to });
        expect((await s.release(l.leaseId, l.fencingToken, OutcomeKind.SUCCESS)).case).toBe("released");
      }
      s.end();
    });
    await Promise.all(workers);
    expect(holds).toHaveLength(360);
    const byKey = new Map<string, Hold[]>();
    for (const h of holds) byKey.set(h.key, [...(byKey.get(h.key) ?? []), h]);
    expect(byKey.size).toBe(10);
    for (const list of byKey.values()) {
      list.sort((x, y) => (x.token < y.token ? -1 : 1));
      for (let i = 1; i < list.length; i++) {
        expect(list[i]!.token).toBeGreaterThan(list[i - 1]!.token);
        // Granted later (higher token) ⇒ started after the previous holder let go.
        expect(list[i]!.from).toBeGreaterThanOrEqual(list[i - 1]!.to);
      }
    }
  });
});
