import { describe, expect, it } from "vitest";
import { policySpec, type PolicySet } from "@proxybroker/sdk/model";
import { HostPolicies, MAX_HOSTS_PER_SET } from "../../../src/lease/host-policies.js";

const DEFAULTS = { maxConcurrency: 1, minIntervalMs: 0, defaultTtlMs: 30_000, banTtlMs: 3_600_000, maxIntervalMs: 60_000 };

function set(policies: PolicySet["policies"], history: PolicySet["history"] = []): PolicySet {
  return { version: "e.1", epoch: "e", policies, history, proxies: 1 };
}

describe("HostPolicies", () => {
  it("resolves a host once per policy set, and anew under a replaced set", () => {
    const hosts = new HostPolicies(DEFAULTS);
    const first = set([policySpec({ pattern: "*.example.com", minIntervalMs: 500, group: "example" })]);
    const a = hosts.of(first, "shop.example.com");
    expect(a.eff).toMatchObject({ domainKey: "example", minIntervalMs: 500, maxConcurrency: 1 });
    expect(hosts.of(first, "shop.example.com")).toBe(a);
    expect(hosts.of(first, "other.org").eff).toMatchObject({ domainKey: "other.org", minIntervalMs: 0 });
    const second = set([policySpec({ pattern: "*.example.com", minIntervalMs: 900 })], [{ policies: first.policies, retiredAt: 1 }]);
    const b = hosts.of(second, "shop.example.com");
    expect(b.eff).toMatchObject({ domainKey: "shop.example.com", minIntervalMs: 900 });
    expect(b.shadowKeys).toEqual(["example"]);
  });

  it("starts a set's memory over beyond MAX_HOSTS_PER_SET hosts, answering the same", () => {
    const hosts = new HostPolicies(DEFAULTS);
    const s = set([policySpec({ pattern: "*", minIntervalMs: 250 })]);
    const early = hosts.of(s, "h0.example");
    for (let i = 1; i <= MAX_HOSTS_PER_SET; i++) hosts.of(s, `h${i}.example`);
    const again = hosts.of(s, "h0.example");
    expect(again).not.toBe(early);
    expect(again).toEqual(early);
  });
});
