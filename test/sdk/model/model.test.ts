import { describe, expect, it } from "vitest";
import { InvalidInputError, hostFromDomain, hostFromUrl, targetHost } from "@proxybroker/sdk/model";
import { effectivePolicy, normalizePattern, policySpec } from "@proxybroker/sdk/model";
import { parseProxySpec } from "@proxybroker/sdk/model";
import { DEFAULT_SCORING, quarantineLengthMs, rateLimitBackoffMs, scoreAfterHealth, scoreAfterOutcome } from "@proxybroker/sdk/model";
import type { DomainPolicySpec } from "@proxybroker/sdk/model";

const policy = (p: Partial<DomainPolicySpec> & { pattern: string }): DomainPolicySpec => policySpec(p);
const defaults = { maxConcurrency: 1, minIntervalMs: 0, defaultTtlMs: 30_000, banTtlMs: 3_600_000, maxIntervalMs: 60_000 };

describe("domain-keys", () => {
  it("lowercases, drops port and trailing dot, and punycodes IDN hosts", () => {
    expect(hostFromDomain("Shop.Example.COM.")).toBe("shop.example.com");
    expect(hostFromDomain("shop.example.com:8443")).toBe("shop.example.com");
    expect(hostFromDomain("bücher.de")).toBe("xn--bcher-kva.de");
    expect(hostFromUrl("https://WWW.Example.com:444/a?b#c")).toBe("www.example.com");
    expect(hostFromUrl("http://[::1]:8080/")).toBe("[::1]");
    expect(targetHost({ domain: "", targetUrl: "http://10.0.0.1/x" })).toBe("10.0.0.1");
  });

  it("rejects what is not a host, naming the field", () => {
    for (const bad of ["exa mple.com", "-bad.com", "a..b", "", "http://x.com/"]) {
      expect(() => hostFromDomain(bad)).toThrow(InvalidInputError);
    }
    expect(() => hostFromUrl("mailto:a@b.c")).toThrow(/target_url/);
    expect(() => targetHost({ domain: "", targetUrl: "" })).toThrow(/give domain or target_url/);
  });
});

describe("domain policies", () => {
  const policies = [
    policy({ pattern: "*", minIntervalMs: 100 }),
    policy({ pattern: "*.example.com", group: "example", minIntervalMs: 2_000 }),
    policy({ pattern: "api.example.com", maxConcurrency: 4 }),
  ];

  it("applies the most specific pattern; a group maps hosts to one domain-key", () => {
    expect(effectivePolicy(policies, "shop.example.com", defaults)).toMatchObject({ domainKey: "example", minIntervalMs: 2_000 });
    expect(effectivePolicy(policies, "api.example.com", defaults)).toMatchObject({
      domainKey: "api.example.com",
      maxConcurrency: 4,
      minIntervalMs: 0,
    });
    expect(effectivePolicy(policies, "example.com", defaults)).toMatchObject({ domainKey: "example.com", minIntervalMs: 100 });
    expect(effectivePolicy([], "a.org", defaults)).toEqual({
      domainKey: "a.org",
      ...defaults,
      pacing: "release",
      jitterMs: 0,
      adaptive: true,
    });
  });

  it("validates patterns", () => {
    expect(normalizePattern("*.Example.COM")).toBe("*.example.com");
    expect(() => normalizePattern("a.*.com")).toThrow(/pattern/);
  });
});

describe("proxy specs", () => {
  it("takes bare host:port as http and keeps the password in the url, not the id", () => {
    expect(parseProxySpec({ url: "10.0.0.1:3128", tier: "", labels: {} })).toMatchObject({
      id: "10.0.0.1:3128",
      url: "http://10.0.0.1:3128",
    });
    expect(parseProxySpec({ url: "http://u:p@Proxy.Example:8080", tier: "dc", labels: { country: "de" } })).toMatchObject({
      id: "u@proxy.example:8080",
      url: "http://u:p@proxy.example:8080",
      tier: "dc",
    });
    expect(parseProxySpec({ url: "socks5://10.0.0.2:1080", tier: "", labels: {} }).url).toBe("socks5://10.0.0.2:1080");
    // A scheme's default port is still the proxy's port.
    expect(parseProxySpec({ url: "http://10.0.0.3:80", tier: "", labels: {} })).toMatchObject({
      id: "10.0.0.3:80",
      url: "http://10.0.0.3:80",
    });
    expect(parseProxySpec({ url: "https://p.example:443", tier: "", labels: {} }).id).toBe("p.example:443");
  });

  it("says what is wrong with a bad spec", () => {
    expect(() => parseProxySpec({ url: "10.0.0.1", tier: "", labels: {} })).toThrow(/no port/);
    expect(() => parseProxySpec({ url: "ftp://10.0.0.1:21", tier: "", labels: {} })).toThrow(/scheme ftp/);
    expect(() => parseProxySpec({ url: "http://10.0.0.1:80/path", tier: "", labels: {} })).toThrow(/path/);
    expect(() => parseProxySpec({ url: "10.0.0.1:80", tier: "a b", labels: {} })).toThrow(/tier/);
    expect(() => parseProxySpec({ url: "10.0.0.1:80", tier: "", labels: { "a=b": "c" } })).toThrow(/label key/);
  });
});

describe("scoring numbers (SPEC §2)", () => {
  it("applies outcome and health deltas within [0, 100]", () => {
    expect(scoreAfterOutcome(DEFAULT_SCORING, 50, "SUCCESS")).toBe(52);
    expect(scoreAfterOutcome(DEFAULT_SCORING, 99, "SUCCESS")).toBe(100);
    expect(scoreAfterOutcome(DEFAULT_SCORING, 10, "PROXY_ERROR")).toBe(0);
    expect(scoreAfterOutcome(DEFAULT_SCORING, 50, "TARGET_ERROR")).toBe(50);
    expect(scoreAfterHealth(DEFAULT_SCORING, 50, "pass")).toBe(53);
    expect(scoreAfterHealth(DEFAULT_SCORING, 50, "fail")).toBe(40);
    expect(scoreAfterHealth(DEFAULT_SCORING, 50, "error")).toBeCloseTo(35);
  });

  it("doubles quarantines with jitter up to the cap, and backs off rate limits", () => {
    expect(quarantineLengthMs(DEFAULT_SCORING, 1, 0.5)).toBe(600_000);
    expect(quarantineLengthMs(DEFAULT_SCORING, 2, 0.5)).toBe(1_200_000);
    expect(quarantineLengthMs(DEFAULT_SCORING, 1, 0)).toBe(540_000);
    expect(quarantineLengthMs(DEFAULT_SCORING, 1, 0.999999)).toBeCloseTo(660_000, -1);
    expect(quarantineLengthMs(DEFAULT_SCORING, 20, 0.999999)).toBe(86_400_000);
    expect(rateLimitBackoffMs(DEFAULT_SCORING, 1)).toBe(1_000);
    expect(rateLimitBackoffMs(DEFAULT_SCORING, 4)).toBe(8_000);
    expect(rateLimitBackoffMs(DEFAULT_SCORING, 30)).toBe(300_000);
  });
});
