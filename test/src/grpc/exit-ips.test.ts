import { describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { statusOf } from "../../support/grpc-status.js";
import type { StoreKind } from "../../support/broker.js";
import { withBroker } from "../../support/with-broker.js";

/**
 * G9 through the broker: a proxy that shares its host waits for its first probe in a pool the
 * health checker probes; once probes showed two proxies leave from one exit IP, they are leased
 * as one IP; ListProxies shows the exit.
 */
describe.each<StoreKind>(["embedded", "redis", "cluster"])("exit IPs through the broker (%s store)", (kind) => {
  const probed: string[][] = [];
  const b = withBroker({
    kind,
    each: true,
    probeFirstPools: new Set(["default"]),
    probeNew: (_pool, ids) => probed.push([...ids]),
  });

  it("hands proxies new to the pool to the health checker at once, and only those", async () => {
    probed.length = 0;
    await b.admin.addProxies({ proxies: [{ url: "10.9.0.1:1001" }] });
    await b.admin.addProxies({ proxies: [{ url: "10.9.0.1:1001" }, { url: "http://s1:pw@10.9.0.1:1002" }] });
    expect(probed).toEqual([["10.9.0.1:1001"], ["s1@10.9.0.1:1002"]]);
  });

  const ids = ["10.9.0.1:1001", "10.9.0.1:1002"];

  it("waits for the first probe, then leases proxies of one exit one at a time", async () => {
    await b.admin.addProxies({ proxies: ids.map((url) => ({ url })) });
    const waiting = await statusOf(b.broker.acquireLease({ workerId: "w", domain: "shop.example" }));
    expect(waiting.code).toBe(status.RESOURCE_EXHAUSTED);

    for (const id of ids) await b.store.recordHealth("default", id, "pass", 0, "198.51.100.7");
    const listed = await b.admin.listProxies({});
    expect(listed.proxies.map((p) => p.exitIp)).toEqual(["198.51.100.7", "198.51.100.7"]);

    const { lease } = await b.broker.acquireLease({ workerId: "w", domain: "shop.example" });
    expect(lease?.proxy?.exitIp).toBe("198.51.100.7");
    // the other proxy of the exit is held back by the lease of its sibling…
    expect((await statusOf(b.broker.acquireLease({ workerId: "w2", domain: "shop.example" }))).code).toBe(status.RESOURCE_EXHAUSTED);
    // …but not for another domain-key
    const other = await b.broker.acquireLease({ workerId: "w2", domain: "other.example" });
    expect(other.lease?.proxy?.id).toBeDefined();
    await b.broker.releaseLease({ leaseId: lease!.leaseId, fencingToken: lease!.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } });
    const next = await b.broker.acquireLease({ workerId: "w2", domain: "shop.example" });
    expect(next.lease?.proxy?.exitIp).toBe("198.51.100.7");
  });

  it("grants proxies of distinct exits side by side", async () => {
    await b.admin.addProxies({ proxies: ids.map((url) => ({ url })) });
    await b.store.recordHealth("default", ids[0] ?? "", "pass", 0, "198.51.100.1");
    await b.store.recordHealth("default", ids[1] ?? "", "fail", 0, "");
    // a failed probe saw the proxy too (its exit stays unknown, as its own)
    const a = await b.broker.acquireLease({ workerId: "w", domain: "shop.example" });
    const c = await b.broker.acquireLease({ workerId: "w", domain: "shop.example" });
    expect(new Set([a.lease?.proxy?.id, c.lease?.proxy?.id])).toEqual(new Set(ids));
  });
});
