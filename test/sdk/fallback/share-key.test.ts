/**
 * Share keys (G8 in fallback): the one mapping from a domain-key to the key fallback shares and
 * reservations are cut by — the key itself, or `#<group>` for a key of an isolation group.
 */
import { describe, expect, it } from "vitest";
import { policySpec, type DomainPolicySpec } from "@proxybroker/sdk/model";
import { shareKeyOf } from "@proxybroker/sdk/model";
import { shareKeyOf as exported } from "../../../sdk/src/fallback/index.js";

const policy = (p: Partial<DomainPolicySpec> & { pattern: string }): DomainPolicySpec => policySpec(p);

describe("shareKeyOf", () => {
  it("is the domain-key itself when no policy, or a policy without isolation group, applies", () => {
    expect(shareKeyOf([], "shop.example")).toBe("shop.example");
    expect(shareKeyOf([policy({ pattern: "shop.example", minIntervalMs: 1_000 })], "shop.example")).toBe("shop.example");
    expect(shareKeyOf([policy({ pattern: "other.example", isolationGroup: "fraud" })], "shop.example")).toBe("shop.example");
  });

  it("is #<group> for a host whose policy names an isolation group, exact or by wildcard", () => {
    const policies = [
      policy({ pattern: "a.example", isolationGroup: "fraud" }),
      policy({ pattern: "*.b.example", isolationGroup: "fraud" }),
    ];
    expect(shareKeyOf(policies, "a.example")).toBe("#fraud");
    expect(shareKeyOf(policies, "www.b.example")).toBe("#fraud");
    // `*.b.example` matches subdomains only
    expect(shareKeyOf(policies, "b.example")).toBe("b.example");
  });

  it("takes the policy whose group a domain-key names before the one that applies to it as a host", () => {
    const policies = [
      policy({ pattern: "*.shops.example", group: "shops.example", isolationGroup: "fraud" }),
      policy({ pattern: "*", isolationGroup: "catchall" }),
      policy({ pattern: "*.plain.example", group: "plain" }),
    ];
    // "shops.example" is the group's key; as a host it would only match "*"
    expect(shareKeyOf(policies, "shops.example")).toBe("#fraud");
    // a group without isolation group stays its own key, whatever "*" says
    expect(shareKeyOf(policies, "plain")).toBe("plain");
    expect(shareKeyOf(policies, "elsewhere.example")).toBe("#catchall");
  });

  it("gives the same answer whatever the order of the policies (the broker's and a snapshot's may differ)", () => {
    const policies = [
      policy({ pattern: "*.x.example", group: "x", isolationGroup: "zeta" }),
      policy({ pattern: "x.example", group: "x", isolationGroup: "alpha" }),
      policy({ pattern: "y.example", group: "x" }),
    ];
    expect(shareKeyOf(policies, "x")).toBe("#alpha");
    expect(shareKeyOf([...policies].reverse(), "x")).toBe("#alpha");
  });

  it("is exported with the fallback pool's parts", () => {
    expect(exported).toBe(shareKeyOf);
  });
});
