import { beforeAll, describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { msOf } from "@proxybroker/sdk/wire";
import { statusOf } from "../../support/grpc-status.js";
import type { StoreKind } from "../../support/broker.js";
import { withBroker } from "../../support/with-broker.js";

/** The isolation group and affinity window of a domain policy (G8): checked at the edge, kept, given back. */
describe.each<StoreKind>(["embedded", "redis"])("a domain policy's isolation group (%s store)", (kind) => {
  const b = withBroker({ kind });

  beforeAll(async () => {
    await b.admin.addProxies({ proxies: [{ url: "10.1.0.1:3128" }] });
  });

  it("is normalised, kept and given back by ListDomainPolicies with its affinity; a policy without one has none", async () => {
    const set = await b.admin.setDomainPolicy({
      policy: { pattern: "wildberries.ru", isolationGroup: " Marketplaces ", affinityWindow: durationFromMs(600_000) },
    });
    expect(set.policy?.isolationGroup).toBe("marketplaces");
    await b.admin.setDomainPolicy({ policy: { pattern: "ozon.ru", isolationGroup: "marketplaces" } });
    await b.admin.setDomainPolicy({ policy: { pattern: "plain.example" } });
    const { policies } = await b.admin.listDomainPolicies({});
    const wb = policies.find((p) => p.pattern === "wildberries.ru");
    expect(wb?.isolationGroup).toBe("marketplaces");
    expect(msOf(wb?.affinityWindow)).toBe(600_000);
    const ozon = policies.find((p) => p.pattern === "ozon.ru");
    expect(ozon?.isolationGroup).toBe("marketplaces");
    expect(ozon?.affinityWindow).toBeUndefined();
    const plain = policies.find((p) => p.pattern === "plain.example");
    expect(plain?.isolationGroup).toBe("");
    expect(plain?.affinityWindow).toBeUndefined();
  });

  it("INVALID_ARGUMENT naming the field for a bad group, a negative or too long affinity, an affinity without a group", async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ isolationGroup: "market places!" }, /isolation_group: .*market places!/],
      [{ isolationGroup: "-marketplaces" }, /isolation_group/],
      [{ isolationGroup: "x".repeat(254) }, /isolation_group/],
      [{ isolationGroup: "marketplaces", affinityWindow: durationFromMs(-1_000) }, /affinity_window must not be negative/],
      [{ isolationGroup: "marketplaces", affinityWindow: durationFromMs(86_400_001) }, /affinity_window 86400001 ms is above a day/],
      [{ affinityWindow: durationFromMs(60_000) }, /affinity_window needs an isolation_group/],
      [{ isolationGroup: "  ", affinityWindow: durationFromMs(60_000) }, /affinity_window needs an isolation_group/],
    ];
    for (const [fields, message] of cases) {
      const err = await statusOf(b.admin.setDomainPolicy({ policy: { pattern: "bad.example", ...fields } }));
      expect(err.code, String(message)).toBe(status.INVALID_ARGUMENT);
      expect(err.details).toMatch(message);
    }
    // nothing of them was kept, and the broker keeps serving
    const { policies } = await b.admin.listDomainPolicies({});
    expect(policies.some((p) => p.pattern === "bad.example")).toBe(false);
    expect((await b.broker.acquireLease({ domain: "plain.example" })).lease).toBeDefined();
  });

  it("INVALID_ARGUMENT for a policy whose domain-key group another policy puts in another isolation group", async () => {
    await b.admin.setDomainPolicy({ policy: { pattern: "*.ozon.example", group: "ozon", isolationGroup: "market" } });
    const err = await statusOf(b.admin.setDomainPolicy({ policy: { pattern: "ozon.example", group: "ozon", isolationGroup: "social" } }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/isolation_group: policy \*\.ozon\.example of group "ozon" has isolation group "market"/);
    // the same isolation group is fine; nothing of the refused one was kept
    await b.admin.setDomainPolicy({ policy: { pattern: "ozon.example", group: "ozon", isolationGroup: "market" } });
    const { policies } = await b.admin.listDomainPolicies({});
    expect(policies.filter((p) => p.group === "ozon").map((p) => p.isolationGroup)).toEqual(["market", "market"]);
  });

  it("a day of affinity is the longest allowed", async () => {
    await b.admin.setDomainPolicy({
      policy: { pattern: "day.example", isolationGroup: "slow", affinityWindow: durationFromMs(86_400_000) },
    });
    const { policies } = await b.admin.listDomainPolicies({});
    expect(msOf(policies.find((p) => p.pattern === "day.example")?.affinityWindow)).toBe(86_400_000);
  });
});
