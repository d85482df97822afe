import { beforeEach, describe, expect, it } from "vitest";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { TestBroker } from "../../support/broker.js";
import { withBroker } from "../../support/with-broker.js";
import { StreamClient, granted } from "../../support/stream-client.js";

/** The metrics every lease call books, as `name{labels}` → value (histograms by their count). */
async function leaseFigures(b: TestBroker): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const booked = new Set([
    "proxybroker_grants_total",
    "proxybroker_caller_grants_total",
    "proxybroker_denials_total",
    "proxybroker_renewals_total",
    "proxybroker_releases_total",
    "proxybroker_lost_total",
    "proxybroker_store_unavailable_total",
    "proxybroker_acquire_seconds",
  ]);
  for (const m of await b.server.metrics.registry.getMetricsAsJSON()) {
    if (!booked.has(m.name)) continue;
    for (const v of m.values) {
      const name = "metricName" in v && typeof v.metricName === "string" ? v.metricName : m.name;
      // a histogram's buckets depend on timing; its count does not
      if (String(m.type) === "histogram" && name !== `${m.name}_count`) continue;
      const labels = Object.entries(v.labels)
        .map(([k, x]) => `${k}=${String(x)}`)
        .sort()
        .join(",");
      out.set(`${name}{${labels}}`, v.value);
    }
  }
  return out;
}

describe("one lease path for the unary methods and the Lease stream", () => {
  const viaUnary = withBroker({ each: true });
  const viaStream = withBroker({ each: true });
  // one pool of one proxy on each: a second acquire for the same site is denied while the first holds it
  beforeEach(async () => {
    for (const b of [viaUnary, viaStream]) await b.admin.addProxies({ proxies: [{ url: "http://10.9.0.1:3128" }] });
  });

  it("the same calls through either surface move the same metrics by the same amounts", async () => {
    // the same sequence through the unary methods on one broker and the stream on another:
    // a grant, a denial (the only proxy is busy), a renew, a release, a renew of the released lease, a release of a
    // lease never issued, and an acquire with a bad ttl
    const ttl = durationFromMs(10_000);

    const u = viaUnary.broker;
    const lease = (await u.acquireLease({ requestId: "r1", workerId: "w", domain: "shop.example", ttl })).lease!;
    await expect(u.acquireLease({ requestId: "r2", workerId: "w", domain: "shop.example" })).rejects.toMatchObject({ code: 8 });
    await u.renewLease({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, ttl });
    await u.releaseLease({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } });
    await expect(u.renewLease({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, ttl })).rejects.toMatchObject({ code: 5 });
    await expect(u.releaseLease({ leaseId: "unknown", fencingToken: 1n, outcome: { kind: OutcomeKind.SUCCESS } })).rejects.toMatchObject({
      code: 5,
    });
    await expect(u.acquireLease({ requestId: "r3", workerId: "w", domain: "shop.example", ttl: durationFromMs(1) })).rejects.toMatchObject({
      code: 3,
    });

    const s = new StreamClient(viaStream.broker);
    const held = granted(await s.acquire({ requestId: "r1", workerId: "w", domain: "shop.example", ttlMs: 10_000 }));
    expect((await s.acquire({ requestId: "r2", workerId: "w", domain: "shop.example" })).case).toBe("denied");
    expect((await s.renew(held.leaseId, held.fencingToken, 10_000)).case).toBe("renewed");
    expect((await s.release(held.leaseId, held.fencingToken, OutcomeKind.SUCCESS)).case).toBe("released");
    expect((await s.renew(held.leaseId, held.fencingToken, 10_000)).case).toBe("lost");
    expect((await s.release("unknown", 1n, OutcomeKind.SUCCESS)).case).toBe("lost");
    expect((await s.acquire({ requestId: "r3", workerId: "w", domain: "shop.example", ttlMs: 1 })).case).toBe("denied");
    s.end();

    const unary = await leaseFigures(viaUnary);
    const stream = await leaseFigures(viaStream);
    expect(stream).toEqual(unary);
    // and each call was booked: a sequence that moved nothing would compare equal too
    expect(unary.get("proxybroker_grants_total{pool=default}")).toBe(1);
    expect(unary.get("proxybroker_denials_total{pool=default,reason=NO_PROXY_AVAILABLE}")).toBe(1);
    expect(unary.get("proxybroker_denials_total{pool=default,reason=INVALID_ARGUMENT}")).toBe(1);
    expect(unary.get("proxybroker_renewals_total{}")).toBe(1);
    expect(unary.get("proxybroker_releases_total{outcome=SUCCESS}")).toBe(1);
    expect(unary.get("proxybroker_lost_total{reason=NOT_FOUND}")).toBe(2);
    expect(unary.get("proxybroker_acquire_seconds_count{}")).toBe(2);
  });

  it("a release with next books the next grant the same way through either surface", async () => {
    const first = (await viaUnary.broker.acquireLease({ requestId: "a", workerId: "w", domain: "a.example" })).lease!;
    const r = await viaUnary.broker.releaseLease({
      leaseId: first.leaseId,
      fencingToken: first.fencingToken,
      outcome: { kind: OutcomeKind.SUCCESS },
      next: { requestId: "b", workerId: "w", domain: "a.example" },
    });
    expect(r.next.case).toBe("granted");

    const s = new StreamClient(viaStream.broker);
    const held = granted(await s.acquire({ requestId: "a", workerId: "w", domain: "a.example" }));
    const answer = await s.release(held.leaseId, held.fencingToken, OutcomeKind.SUCCESS, { domain: "a.example" });
    expect(answer.case === "released" && answer.value.next.case).toBe("granted");
    s.end();

    const unary = await leaseFigures(viaUnary);
    expect(await leaseFigures(viaStream)).toEqual(unary);
    expect(unary.get("proxybroker_grants_total{pool=default}")).toBe(2);
  });
});
