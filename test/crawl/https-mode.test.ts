/**
 * The crawl harness's HTTPS mode settings (CRAWL_HTTPS): read, checked against the strategies
 * (only the gateway crawls over HTTPS), whether the gate judges the gateway, and the line that
 * says what ran.
 */
import { describe, expect, it } from "vitest";
import { checkHttpsStrategies, describeHttps, gatewayGated, readHttpsMode } from "../../crawl/https-mode.js";

describe("CRAWL_HTTPS", () => {
  it("is off unless set to tunnel or intercept", () => {
    expect(readHttpsMode({})).toBe("off");
    expect(readHttpsMode({ CRAWL_HTTPS: "" })).toBe("off");
    expect(readHttpsMode({ CRAWL_HTTPS: "tunnel" })).toBe("tunnel");
    expect(readHttpsMode({ CRAWL_HTTPS: " intercept " })).toBe("intercept");
    expect(() => readHttpsMode({ CRAWL_HTTPS: "1" })).toThrow(/tunnel or intercept/);
  });

  it("refuses the strategies that speak plain HTTP only", () => {
    expect(() => checkHttpsStrategies("intercept", ["gateway"])).not.toThrow();
    expect(() => checkHttpsStrategies("tunnel", ["gateway", "proxybroker", "naive"])).toThrow(/proxybroker, naive: plain HTTP only/);
    expect(() => checkHttpsStrategies("off", ["naive", "seed000", "seed003", "proxybroker", "gateway"])).not.toThrow();
  });

  it("leaves the gateway ungated in tunnel mode with kept-alive connections only", () => {
    expect(gatewayGated("off")).toBe(true);
    expect(gatewayGated("intercept")).toBe(true);
    expect(gatewayGated("tunnel")).toBe(false);
    expect(gatewayGated("tunnel", "keep-alive")).toBe(false);
    // a new connection per request: a tunnel is a request, paced as one
    expect(gatewayGated("tunnel", "per-request")).toBe(true);
  });

  it("says which mode ran", () => {
    expect(describeHttps("off")).toBe("");
    expect(describeHttps("tunnel")).toBe("HTTPS, gateway in tunnel mode");
    expect(describeHttps("intercept")).toBe("HTTPS, gateway in interception mode");
  });
});
