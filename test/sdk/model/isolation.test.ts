import { describe, expect, it } from "vitest";
import { affinityOf, hostIsolation, policySpec, storedIsolation } from "@proxybroker/sdk/model";
import type { DomainPolicySpec, PolicySet } from "@proxybroker/sdk/model";

function setOf(policies: DomainPolicySpec[], ...history: { at: number; policies: DomainPolicySpec[] }[]): PolicySet {
  return {
    version: "e.1",
    epoch: "e",
    policies,
    history: history.map((h) => ({ retiredAt: h.at, policies: h.policies })),
    proxies: 1,
  };
}

const wb = policySpec({ pattern: "wildberries.ru", isolationGroup: "market", affinityWindowMs: 60_000 });
const ozon = policySpec({ pattern: "ozon.ru", isolationGroup: "market" });

describe("isolation of a host", () => {
  it("is nothing for a host in no group now or lately", () => {
    const r = hostIsolation(setOf([wb, policySpec({ pattern: "other.com" })]), "other.com", "other.com");
    expect(r.params).toBeUndefined();
    expect(r.joined).toEqual([]);
    expect(r.heldSince).toBe(0);
  });

  it("is the host's group with the longest window of its policies", () => {
    const r = hostIsolation(setOf([wb, ozon]), "ozon.ru", "ozon.ru");
    expect(r.params).toEqual({ group: "market", affinityMs: 60_000, formerGroups: [] });
    expect(affinityOf([wb, ozon], "market")).toBe(60_000);
  });

  it("checks the group a host left, and writes none", () => {
    const now = [wb, policySpec({ pattern: "ozon.ru" })];
    const r = hostIsolation(setOf(now, { at: 5, policies: [wb, ozon] }), "ozon.ru", "ozon.ru");
    expect(r.params).toEqual({ group: "", affinityMs: 0, formerGroups: ["market"] });
  });

  it("reads the pairs of an exact key that joined the group, by its old domain-key", () => {
    const before = [wb, policySpec({ pattern: "ozon.ru", group: "oz" })];
    const r = hostIsolation(setOf([wb, ozon], { at: 5, policies: before }), "wildberries.ru", "wildberries.ru");
    expect(r.joined).toEqual([{ key: "oz", since: 5 }]);
    expect(r.heldSince).toBe(0);
  });

  it("holds the group when a wildcard whose hosts are each their own key joined it", () => {
    const wild = policySpec({ pattern: "*.ozon.ru", isolationGroup: "market" });
    const r = hostIsolation(
      setOf([wb, wild], { at: 1234, policies: [wb, policySpec({ pattern: "*.ozon.ru" })] }),
      "wildberries.ru",
      "wildberries.ru",
    );
    expect(r.heldSince).toBe(1234);
  });

  it("names the old group of a grouped wildcard that joined", () => {
    const wild = policySpec({ pattern: "*.ozon.ru", group: "oz", isolationGroup: "market" });
    const before = [wb, policySpec({ pattern: "*.ozon.ru", group: "oz" })];
    const r = hostIsolation(setOf([wb, wild], { at: 5, policies: before }), "wildberries.ru", "wildberries.ru");
    expect(r.joined).toEqual([{ key: "oz", since: 5 }]);
    expect(r.heldSince).toBe(0);
  });

  it("adds nothing when the group's policies did not change", () => {
    const r = hostIsolation(setOf([wb, ozon], { at: 5, policies: [wb, ozon, policySpec({ pattern: "x.com" })] }), "ozon.ru", "ozon.ru");
    expect(r.joined).toEqual([]);
    expect(r.heldSince).toBe(0);
  });
});

describe("stored isolation", () => {
  it("keeps only what is set", () => {
    expect(storedIsolation("market", 1000)).toEqual({ isolationGroup: "market", affinityWindowMs: 1000 });
    expect(storedIsolation(undefined, Number.NaN)).toEqual({});
    expect(storedIsolation("", 0)).toEqual({});
  });
});
