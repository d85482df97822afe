/**
 * Ping and Pong on the Lease stream (docs/spec.md §7), over real gRPC to an in-process broker on
 * the embedded store: a pong at once with the broker's clock; a worker that keeps a fallback pool
 * recorded as heard up to the time it echoes (never later than now); its claim acknowledged only
 * once stored, a malformed one never; nothing recorded for a worker without a fallback pool or a
 * pool that does not exist.
 */
import { afterEach, describe, expect, it } from "vitest";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { LeaseResponse } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { TestBroker } from "../../support/broker.js";
import { withBroker } from "../../support/with-broker.js";
import { StreamClient } from "../../support/stream-client.js";

type Answer = LeaseResponse["kind"];

function pong(a: Answer) {
  if (a.case !== "pong") throw new Error(`expected a pong, got ${String(a.case)}`);
  return a.value;
}

describe("Ping on the Lease stream", () => {
  const broker = withBroker({ each: true });
  let stream: StreamClient | undefined;
  afterEach(() => {
    stream?.cancel();
  });

  const open = async () => {
    await broker.admin.addProxies({ proxies: [{ url: "10.4.0.1:3128" }, { url: "10.4.0.2:3128" }] });
    stream = new StreamClient(broker.broker);
    return { broker, stream };
  };
  const heard = async (b: TestBroker, workerId: string) =>
    (await b.store.liveWorkers("default", 0, { claims: true })).find((w) => w.workerId === workerId);
  const until = () => timestampFromMs(Date.now() + 600_000);

  it("answers with the broker's clock; records the echoed time, never one from the future", async () => {
    const { broker: b, stream: s } = await open();
    const before = Date.now();
    const p = pong(await s.ping({ workerId: "w", pool: "default", fallbackPool: true }));
    expect(timestampMs(p.time!)).toBeGreaterThanOrEqual(before);
    expect(p.claimVersion).toBe(0n);
    pong(await s.ping({ workerId: "w", pool: "default", fallbackPool: true, heardTime: p.time }));
    await expect.poll(async () => (await heard(b, "w"))?.heardAt).toBe(timestampMs(p.time!));
    const future = Date.now() + 3_600_000;
    pong(await s.ping({ workerId: "w", pool: "default", fallbackPool: true, heardTime: timestampFromMs(future) }));
    await expect.poll(async () => (await heard(b, "w"))?.heardAt ?? 0).toBeGreaterThan(timestampMs(p.time!));
    expect((await heard(b, "w"))?.heardAt).toBeLessThan(future);
  });

  it("acknowledges a claim once stored; a malformed claim never, and the one before stays", async () => {
    const { broker: b, stream: s } = await open();
    const claim = {
      version: 42n,
      members: ["w", "x"],
      keys: [{ domain: "shop.example", shareKey: "shop.example", whole: false, untilTime: until() }],
    };
    expect(pong(await s.ping({ workerId: "w", pool: "default", fallbackPool: true, claim })).claimVersion).toBe(42n);
    expect((await heard(b, "w"))?.claims?.map((c) => c.version)).toEqual([42]);
    const bad = {
      version: 43n,
      members: ["w"],
      keys: [{ domain: "shop.example", shareKey: "#Not A Group", whole: true, untilTime: until() }],
    };
    expect(pong(await s.ping({ workerId: "w", pool: "default", fallbackPool: true, claim: bad })).claimVersion).toBe(0n);
    expect((await heard(b, "w"))?.claims?.map((c) => c.version)).toEqual([42]);
    const grouped = {
      version: 44n,
      members: ["w"],
      keys: [{ domain: "shop.example", shareKey: "#market", whole: true, untilTime: until() }],
    };
    expect(pong(await s.ping({ workerId: "w", pool: "default", fallbackPool: true, claim: grouped })).claimVersion).toBe(44n);
    expect((await heard(b, "w"))?.claims?.map((c) => c.version)).toEqual([44, 42]);
    // a new process under the same id: its first claim is fresh, and the ones before are forgotten
    const fresh = { version: 50n, members: ["w"], keys: [], fresh: true };
    expect(pong(await s.ping({ workerId: "w", pool: "default", fallbackPool: true, claim: fresh })).claimVersion).toBe(50n);
    expect((await heard(b, "w"))?.claims?.map((c) => c.version)).toEqual([50]);
  });

  it("records nothing for a worker without a fallback pool, nor in a pool that does not exist; still a pong", async () => {
    const { broker: b, stream: s } = await open();
    const claim = { version: 1n, members: ["w"], keys: [] };
    expect(pong(await s.ping({ workerId: "python", pool: "default", fallbackPool: false, claim })).claimVersion).toBe(0n);
    expect(pong(await s.ping({ workerId: "w", pool: "invented", fallbackPool: true, claim })).claimVersion).toBe(0n);
    expect(pong(await s.ping({ workerId: "", pool: "default", fallbackPool: true })).claimVersion).toBe(0n);
    expect(await heard(b, "python")).toBeUndefined();
    expect(await b.store.liveWorkers("invented", 0)).toEqual([]);
  });
});
