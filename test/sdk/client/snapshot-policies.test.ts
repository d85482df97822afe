import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import { startBroker } from "../../support/broker.js";
import type { TestBroker } from "../../support/broker.js";

/**
 * A fallback pool paces by the policies the broker enforces: a policy set after the client took
 * its whole snapshot reaches it with the next membership refresh (which carries the policies'
 * version), not a whole snapshot period later; the classifier reads their response expectations.
 */
describe("fallback pool policies", () => {
  let b: TestBroker;
  let client: ProxyBrokerClient;

  beforeAll(async () => {
    b = await startBroker({ kind: "embedded" });
    await b.admin.addProxies({ proxies: [{ url: "http://10.8.0.1:3128" }, { url: "http://10.8.0.2:3128" }] });
  });
  afterAll(async () => {
    await client.close();
    await b.stop();
  });

  it("takes in a policy set after its snapshot within a membership refresh", async () => {
    client = new ProxyBrokerClient({
      address: b.address,
      workerId: "policy-follower",
      fallback: { snapshotRefreshMs: 600_000, membershipRefreshMs: 200 },
    });
    await expect.poll(() => client.fallback.snapshot?.proxies.length ?? 0, { timeout: 5_000 }).toBe(2);
    expect(client.fallback.snapshot?.policies.some((p) => p.pattern === "strict.example")).toBe(false);
    await b.admin.setDomainPolicy({ policy: { pattern: "strict.example", minInterval: durationFromMs(340) } });
    await expect
      .poll(() => client.fallback.snapshot?.policies.find((p) => p.pattern === "strict.example")?.minIntervalMs, { timeout: 3_000 })
      .toBe(340);
  });

  it("classifies by the response expectations of the broker's policy when the call gives none", async () => {
    const page = (body: string) => ({ status: 200, url: "http://shop.strict.example/p/1", headers: { "content-type": "text/html" }, body });
    expect(client.classify(page("<p>no product here</p>")).kind).toBe("SUCCESS");
    await b.admin.setDomainPolicy({ policy: { pattern: "*.strict.example", expectations: { requiredMarkers: ["#product"] } } });
    await expect.poll(() => client.classify(page("<p>no product here</p>")).kind, { timeout: 3_000 }).toBe("BLOCKED");
    expect(client.classify(page('<div id="product">ok</div>')).kind).toBe("SUCCESS");
    // the call's own markers replace the policy's
    expect(client.classify(page("<p>no product here</p>"), { markers: ["product"] }).kind).toBe("SUCCESS");
  });
});
