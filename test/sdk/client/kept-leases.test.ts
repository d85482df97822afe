import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { afterEach, describe, expect, it } from "vitest";
import { NoProxyAvailableError, ProxyBrokerClient } from "@proxybroker/sdk";
import type { ClientOptions } from "@proxybroker/sdk";
import { withBroker } from "../../support/with-broker.js";

const DOMAIN = "https://shop.kept.example/p/1";

/**
 * Kept leases through the SDK client (docs/spec.md §7): `acquire(target, { reuse: true })` gives
 * a `reusable` lease when the broker allows it, and the broker's LeaseWanted reaches the lease as
 * `wanted` and its `onWanted` callbacks. A real broker on a real redis-server, real gRPC.
 */
describe("ProxyBrokerClient kept leases", () => {
  const b = withBroker({ kind: "redis", each: true });
  const clients: ProxyBrokerClient[] = [];
  const client = (workerId: string, extra: Partial<ClientOptions> = {}) => {
    const c = new ProxyBrokerClient({
      address: b.address,
      workerId,
      breaker: { callTimeoutMs: 2_000, resetTimeoutMs: 300, volumeThreshold: 1 },
      ...extra,
    });
    clients.push(c);
    return c;
  };
  const start = async (proxies: number, { configured = true } = {}) => {
    const urls = Array.from({ length: proxies }, (_, i) => ({ url: `10.6.0.${i + 1}:3128` }));
    expect((await b.admin.addProxies({ proxies: urls })).added).toHaveLength(proxies);
    // every host configured without an interval: known not to be paced (a host no policy names is not)
    if (configured) await b.admin.setDomainPolicy({ policy: { pattern: "*" } });
  };
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  it("a reusable lease is asked back when another client is denied its domain", async () => {
    await start(1);
    const keeper = client("keeper");
    const lease = await keeper.acquire(DOMAIN, { reuse: true });
    expect(lease.source).toBe("broker");
    expect(lease.reusable).toBe(true);
    expect(lease.wanted).toBe(false);
    let fired = 0;
    lease.onWanted(() => fired++);

    const other = client("other");
    await expect(other.acquire(DOMAIN, { maxWaitMs: 0 })).rejects.toBeInstanceOf(NoProxyAvailableError);
    await expect.poll(() => lease.wanted, { timeout: 2_000 }).toBe(true);
    expect(fired).toBe(1);
    // a callback added once it was wanted is called at once; the first is not called again
    let late = 0;
    lease.onWanted(() => late++);
    expect(late).toBe(1);
    expect(fired).toBe(1);

    await lease.release({ kind: "SUCCESS" });
    const next = await other.acquire(DOMAIN, { maxWaitMs: 0 });
    expect(next.proxy.id).toBe(lease.proxy.id);
    expect(next.reusable).toBe(false);
  });

  it("a lease acquired without reuse is not reusable and is never asked back", async () => {
    await start(1);
    const holder = client("plain-holder");
    const lease = await holder.acquire(DOMAIN);
    expect(lease.reusable).toBe(false);
    let fired = 0;
    lease.onWanted(() => fired++);
    await expect(client("plain-other").acquire(DOMAIN, { maxWaitMs: 0 })).rejects.toBeInstanceOf(NoProxyAvailableError);
    // a round trip on the holder's own stream: a LeaseWanted sent before the denial came before it
    await lease.renew();
    expect(lease.wanted).toBe(false);
    expect(fired).toBe(0);
    await lease.release({ kind: "SUCCESS" });
  });

  it("a lease of a paced domain is not reusable even when asked to reuse", async () => {
    await start(1);
    await b.admin.setDomainPolicy({ policy: { pattern: "*.paced.example", minInterval: durationFromMs(300) } });
    const lease = await client("paced").acquire("https://a.paced.example/", { reuse: true });
    expect(lease.source).toBe("broker");
    expect(lease.reusable).toBe(false);
    await lease.release({ kind: "SUCCESS" });
  });

  it("a lease of a domain no policy names is not reusable: its pacing is not known yet", async () => {
    await start(1, { configured: false });
    const lease = await client("unknown").acquire(DOMAIN, { reuse: true });
    expect(lease.source).toBe("broker");
    expect(lease.reusable).toBe(false);
    await lease.release({ kind: "SUCCESS" });
  });
});
