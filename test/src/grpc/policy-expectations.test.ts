import { beforeAll, describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { statusOf } from "../../support/grpc-status.js";
import type { StoreKind } from "../../support/broker.js";
import { withBroker } from "../../support/with-broker.js";

const EXPECTS = {
  blockMarkers: ["Access denied", "cf-chl"],
  requiredMarkers: ["#product", "css:div.price", "Add to cart"],
  minBytes: 2_048,
  slowDownPatterns: ["please wait"],
};

/** Response expectations of a domain policy: kept by the store, given back, refused when malformed (docs/spec.md §10). */
describe.each<StoreKind>(["embedded", "redis"])("a domain policy's response expectations (%s store)", (kind) => {
  const b = withBroker({ kind });

  beforeAll(async () => {
    await b.admin.addProxies({ proxies: [{ url: "10.1.0.1:3128" }] });
  });

  it("are kept and given back by ListDomainPolicies and the pool snapshot; a policy without them has none", async () => {
    await b.admin.setDomainPolicy({ policy: { pattern: "shop.example", expectations: EXPECTS } });
    await b.admin.setDomainPolicy({ policy: { pattern: "plain.example" } });
    const { policies } = await b.admin.listDomainPolicies({});
    expect(policies.find((p) => p.pattern === "shop.example")?.expectations).toMatchObject(EXPECTS);
    expect(policies.find((p) => p.pattern === "plain.example")?.expectations).toBeUndefined();
    const snap = await b.broker.getPoolSnapshot({});
    expect(snap.policies.find((p) => p.pattern === "shop.example")?.expectations).toMatchObject(EXPECTS);
  });

  it("changing only the expectations changes the policy version (workers fetch them again)", async () => {
    const before = (await b.broker.getPoolSnapshot({ workersOnly: true })).policyVersion;
    await b.admin.setDomainPolicy({ policy: { pattern: "shop.example", expectations: { ...EXPECTS, minBytes: 4_096 } } });
    await expect
      .poll(async () => (await b.broker.getPoolSnapshot({ workersOnly: true })).policyVersion, { timeout: 3_000 })
      .not.toBe(before);
    const { policies } = await b.admin.listDomainPolicies({});
    expect(policies.find((p) => p.pattern === "shop.example")?.expectations?.minBytes).toBe(4_096);
  });

  it("INVALID_ARGUMENT naming the field for a blank text, a malformed marker, too many texts or too large a minimum", async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ blockMarkers: ["  "] }, /block_markers\[0\] is blank/],
      [{ requiredMarkers: ["ok", "css:div#a#b"] }, /required_markers\[1\].*more than one id/],
      [{ slowDownPatterns: Array.from({ length: 33 }, (_, i) => `t${i}`) }, /slow_down_patterns: at most 32/],
      [{ blockMarkers: ["x".repeat(257)] }, /longer than 256/],
      [{ minBytes: 100_000_001 }, /min_bytes/],
    ];
    for (const [expectations, message] of cases) {
      const err = await statusOf(b.admin.setDomainPolicy({ policy: { pattern: "bad.example", expectations } }));
      expect(err.code).toBe(status.INVALID_ARGUMENT);
      expect(err.details).toMatch(message);
    }
    // nothing of them was kept, and the broker keeps serving
    const { policies } = await b.admin.listDomainPolicies({});
    expect(policies.some((p) => p.pattern === "bad.example")).toBe(false);
    expect((await b.broker.acquireLease({ domain: "shop.example" })).lease).toBeDefined();
  });
});
