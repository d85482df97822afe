import { describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { anyUnpack, durationFromMs } from "@bufbuild/protobuf/wkt";
import { fromBinary } from "@bufbuild/protobuf";
import { StatusSchema } from "@proxybroker/sdk/gen/google/rpc/status_pb";
import { ErrorInfoSchema, RetryInfoSchema } from "@proxybroker/sdk/gen/google/rpc/error_details_pb";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { statusOf } from "../../support/grpc-status.js";
import type { StoreKind } from "../../support/broker.js";
import { withBroker } from "../../support/with-broker.js";

/** The unary RPCs and the status codes of SPEC §5, on both stores. */
describe.each<StoreKind>(["embedded", "redis", "cluster"])("unary RPC status codes (%s store)", (kind) => {
  const b = withBroker({ kind, each: true });

  const start = async () => {
    await b.admin.addProxies({ proxies: [{ url: "10.1.0.1:3128", tier: "dc" }] });
  };

  it("grants, renews and releases; RESOURCE_EXHAUSTED with retry-after-ms when none is eligible", async () => {
    await start();
    const { lease } = await b.broker.acquireLease({ workerId: "w", domain: "a.example" });
    expect(lease?.proxy?.url).toBe("http://10.1.0.1:3128");
    const err = await statusOf(b.broker.acquireLease({ workerId: "w", domain: "a.example" }));
    expect(err.code).toBe(status.RESOURCE_EXHAUSTED);
    const retry = Number(err.metadata.get("retry-after-ms")[0]);
    expect(retry).toBeGreaterThan(25_000);
    const renewed = await b.broker.renewLease({ leaseId: lease!.leaseId, fencingToken: lease!.fencingToken });
    expect(renewed.expireTime).toBeDefined();
    await b.broker.releaseLease({ leaseId: lease!.leaseId, fencingToken: lease!.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } });
  });

  it("errors carry the standard google.rpc details: ErrorInfo with a reason, RetryInfo when to retry", async () => {
    await start();
    await b.broker.acquireLease({ workerId: "w", domain: "d.example" });
    const err = await statusOf(b.broker.acquireLease({ workerId: "w", domain: "d.example" }));
    const raw = err.metadata.get("grpc-status-details-bin")[0];
    expect(raw).toBeInstanceOf(Buffer);
    const st = fromBinary(StatusSchema, raw as Buffer);
    expect(st.code).toBe(status.RESOURCE_EXHAUSTED);
    const info = st.details.map((d) => anyUnpack(d, ErrorInfoSchema)).find((x) => x !== undefined);
    expect(info).toMatchObject({ reason: "NO_PROXY_AVAILABLE", domain: "proxybroker.v1" });
    const retry = st.details.map((d) => anyUnpack(d, RetryInfoSchema)).find((x) => x !== undefined);
    expect(Number(retry?.retryDelay?.seconds ?? 0)).toBeGreaterThan(25);
    const lost = await statusOf(b.broker.renewLease({ leaseId: "nope", fencingToken: 1n }));
    const lostInfo = fromBinary(StatusSchema, lost.metadata.get("grpc-status-details-bin")[0] as Buffer)
      .details.map((d) => anyUnpack(d, ErrorInfoSchema))
      .find((x) => x !== undefined);
    expect(lostInfo?.reason).toBe("LEASE_NOT_FOUND");
  });

  it("ABORTED for an expired lease or another token, NOT_FOUND for an unknown id", async () => {
    await start();
    const { lease } = await b.broker.acquireLease({ workerId: "w", domain: "a.example", ttl: durationFromMs(80) });
    const wrong = await statusOf(b.broker.renewLease({ leaseId: lease!.leaseId, fencingToken: lease!.fencingToken + 1n }));
    expect(wrong.code).toBe(status.ABORTED);
    await new Promise((r) => setTimeout(r, 150));
    const expired = await statusOf(b.broker.renewLease({ leaseId: lease!.leaseId, fencingToken: lease!.fencingToken }));
    expect(expired.code).toBe(status.ABORTED);
    expect(expired.details).toMatch(/expired/);
    const unknown = await statusOf(b.broker.releaseLease({ leaseId: "nope", fencingToken: 1n, outcome: { kind: OutcomeKind.SUCCESS } }));
    expect(unknown.code).toBe(status.NOT_FOUND);
  });

  it("INVALID_ARGUMENT with a message that says what is wrong", async () => {
    await start();
    const cases: Array<[Promise<unknown>, RegExp]> = [
      [b.broker.acquireLease({ domain: "exa mple.com" }), /domain/],
      [b.broker.acquireLease({ targetUrl: "not a url" }), /target_url/],
      [b.broker.acquireLease({ domain: "a.example", ttl: durationFromMs(7_200_000) }), /ttl/],
      [b.broker.acquireLease({ domain: "a.example", pool: "bad pool!" }), /pool/],
      [b.broker.acquireLease({}), /domain or target_url/],
      [b.broker.releaseLease({ leaseId: "x", fencingToken: 1n }), /outcome/],
      [b.admin.setDomainPolicy({ policy: { pattern: "a.*.com" } }), /pattern/],
      [b.admin.listProxies({ pageSize: -1 }), /page_size/],
    ];
    for (const [call, message] of cases) {
      const err = await statusOf(call);
      expect(err.code).toBe(status.INVALID_ARGUMENT);
      expect(err.details).toMatch(message);
    }
    // The broker keeps serving.
    expect((await b.broker.acquireLease({ domain: "a.example" })).lease).toBeDefined();
  });

  it("rejects bad proxy specs one by one and adds the good ones", async () => {
    await start();
    const r = await b.admin.addProxies({
      proxies: [{ url: "ftp://1.2.3.4:21" }, { url: "1.2.3.4" }, { url: "10.1.0.2:3128" }, { url: "10.1.0.1:3128", tier: "res" }],
    });
    expect(r.added).toEqual(["10.1.0.2:3128"]);
    expect(r.updated).toEqual(["10.1.0.1:3128"]);
    expect(r.rejected.map((x) => x.url)).toEqual(["ftp://1.2.3.4:21", "1.2.3.4"]);
    expect(r.rejected[0]!.reason).toMatch(/scheme/);
    expect(r.rejected[1]!.reason).toMatch(/port/);
  });

  it("UNAVAILABLE while draining", async () => {
    await start();
    const draining = b.server.shutdown(200);
    const err = await statusOf(b.broker.acquireLease({ domain: "a.example" }));
    expect([status.UNAVAILABLE, status.CANCELLED]).toContain(err.code);
    await draining;
  });

  it("serves a pool snapshot with proxies, live workers and policies", async () => {
    await start();
    await b.admin.setDomainPolicy({ policy: { pattern: "*.shop.example", minInterval: durationFromMs(500) } });
    await b.broker.acquireLease({ workerId: "worker-7", domain: "a.example" });
    const snap = await b.broker.getPoolSnapshot({ pool: "default" });
    expect(snap.proxies.map((p) => p.id)).toEqual(["10.1.0.1:3128"]);
    expect(snap.liveWorkers.map((w) => w.workerId)).toContain("worker-7");
    expect(snap.policies.map((p) => p.pattern)).toEqual(["*.shop.example"]);
  });
});
