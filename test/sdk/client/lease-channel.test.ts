import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { afterEach, describe, expect, it } from "vitest";
import { LeaseChannel } from "../../../sdk/src/client/lease-channel.js";
import { startBroker, type TestBroker } from "../../support/broker.js";
import { granted, StreamClient } from "../../support/stream-client.js";

const DOMAIN = "late.example";

/** The SDK's Lease stream against a real broker (in-process, real gRPC over loopback). */
describe("LeaseChannel", () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  it("gives back at once a grant that arrives after its acquire timed out here", async () => {
    const tb: TestBroker = await startBroker({ kind: "embedded" });
    cleanup.push(() => tb.stop());
    await tb.admin.addProxies({ proxies: [{ url: "10.40.0.1:3128" }] });
    const holder = new StreamClient(tb.broker);
    cleanup.push(() => holder.cancel());
    const held = granted(await holder.acquire({ domain: DOMAIN, workerId: "holder", ttlMs: 30_000 }));

    const channel = new LeaseChannel({ broker: tb.broker, backoff: { initialMs: 100, maxMs: 1_000 }, clock: Date.now });
    cleanup.push(() => channel.close());
    // waits in the broker for the held proxy, but this side gives up after 200 ms
    const late = channel.acquire(
      { requestId: channel.nextRequestId(), workerId: "late", domain: DOMAIN, maxWait: durationFromMs(2_000), ttl: durationFromMs(30_000) },
      200,
    );
    await expect(late).rejects.toMatchObject({ message: expect.stringContaining("no answer from the broker") });
    // the broker grants it when the holder lets go: nobody waits for that grant any more
    await holder.release(held.leaseId, held.fencingToken);
    // given back, the proxy is free again (not leased to nobody for 30 s)
    const next = await holder.acquire({ domain: DOMAIN, workerId: "next", maxWaitMs: 3_000 });
    expect(next.case).toBe("granted");
  });
});
