import { describe, expect, it } from "vitest";
import { mergeParams, ParamsError, paramsFromHeaders, paramsFromUsername } from "../../../src/gateway/params.js";
import { GatewaySettingsError, gatewaySettings } from "../../../src/gateway/settings.js";
import { TargetPolicy, denyTargetsOf, ownAddresses } from "../../../src/gateway/targets.js";

describe("gateway parameters", () => {
  it("reads every key of the username grammar, in any order", () => {
    expect(paramsFromUsername("session-cart42-tier-premium-label-country:de-label-kind=resi-pool-eu-wait-2.5")).toEqual({
      session: "cart42",
      tier: "premium",
      labels: { country: "de", kind: "resi" },
      pool: "eu",
      maxWaitMs: 2_500,
    });
    expect(paramsFromUsername("")).toEqual({ labels: {} });
  });

  it("refuses a malformed username with a message naming what is wrong", () => {
    expect(() => paramsFromUsername("session")).toThrow(/key-value pairs/);
    expect(() => paramsFromUsername("sesion-x")).toThrow(/unknown key "sesion"/);
    expect(() => paramsFromUsername("label-country")).toThrow(/NAME:VALUE/);
    expect(() => paramsFromUsername("wait-soon")).toThrow(/seconds/);
    expect(() => paramsFromUsername("session-a b")).toThrow(ParamsError);
  });

  it("reads the headers, and a header wins over the username", () => {
    const headers = paramsFromHeaders({
      "x-proxybroker-session": "s2",
      "x-proxybroker-labels": "country=fr, kind=dc",
      "x-proxybroker-max-wait": "1",
    });
    expect(headers).toEqual({ session: "s2", labels: { country: "fr", kind: "dc" }, maxWaitMs: 1_000 });
    expect(mergeParams(paramsFromUsername("session-s1-label-country:de-tier-t"), headers)).toEqual({
      session: "s2",
      tier: "t",
      labels: { country: "fr", kind: "dc" },
      maxWaitMs: 1_000,
    });
  });
});

describe("gateway settings", () => {
  it("binds loopback by default and refuses a real address without client tokens", () => {
    const s = gatewaySettings({}, "gw");
    expect([s.host, s.port, s.brokerTarget, s.pool]).toEqual(["127.0.0.1", 8899, "127.0.0.1:50051", "default"]);
    expect(() => gatewaySettings({ listen: "0.0.0.0:8899" }, "gw")).toThrow(GatewaySettingsError);
    expect(gatewaySettings({ listen: "0.0.0.0:8899", tokensFile: "/etc/tokens" }, "gw").host).toBe("0.0.0.0");
  });

  it("takes several brokers, and refuses bad numbers", () => {
    expect(gatewaySettings({ address: "10.0.0.5:50051,10.0.0.6:50051" }, "gw").brokerTarget).toBe("ipv4:10.0.0.5:50051,10.0.0.6:50051");
    // the SDK's own target form, as it is (it was prefixed once more, and no broker was reachable)
    const sdkForm = gatewaySettings({ address: "ipv4:10.0.0.5:50051,10.0.0.6:50051" }, "gw");
    expect([sdkForm.brokerTarget, sdkForm.brokerAddresses]).toEqual([
      "ipv4:10.0.0.5:50051,10.0.0.6:50051",
      ["10.0.0.5:50051", "10.0.0.6:50051"],
    ]);
    expect(gatewaySettings({ address: "dns:broker.internal:50051" }, "gw").brokerTarget).toBe("dns:broker.internal:50051");
    expect(() => gatewaySettings({ waitMs: "soon" }, "gw")).toThrow(/GATEWAY_WAIT_MS/);
    expect(gatewaySettings({}, "gw").shutdownGraceMs).toBe(10_000);
    expect(gatewaySettings({ shutdownGraceMs: "0" }, "gw").shutdownGraceMs).toBe(0);
    expect(() => gatewaySettings({ shutdownGraceMs: "-1" }, "gw")).toThrow(/GATEWAY_SHUTDOWN_GRACE_MS/);
    expect(gatewaySettings({}, "gw").connectPorts.refusal(443)).toBeUndefined();
    expect(gatewaySettings({}, "gw").connectPorts.refusal(25)).toMatch(/GATEWAY_CONNECT_PORTS/);
    expect(gatewaySettings({ connectPorts: "443, 8443" }, "gw").connectPorts.refusal(8443)).toBeUndefined();
    expect(gatewaySettings({ connectPorts: "any" }, "gw").connectPorts.refusal(25)).toBeUndefined();
    expect(() => gatewaySettings({ connectPorts: "443,http" }, "gw")).toThrow(/GATEWAY_CONNECT_PORTS/);
    expect(gatewaySettings({ denyPrivate: "1", denyTargets: "none" }, "gw").denyTargets).toContain("10.0.0.0/8");
    expect(gatewaySettings({}, "gw").denyTargets).not.toContain("10.0.0.0/8");
    expect(() => gatewaySettings({ denyPrivate: "maybe" }, "gw")).toThrow(/GATEWAY_DENY_PRIVATE/);
    expect(gatewaySettings({}, "gw").maxPools).toBe(64);
    expect(gatewaySettings({ maxPools: "8", poolIdleMs: "60000" }, "gw")).toMatchObject({ maxPools: 8, poolIdleMs: 60_000 });
    expect(() => gatewaySettings({ maxPools: "0" }, "gw")).toThrow(/GATEWAY_MAX_POOLS/);
    expect(() => gatewaySettings({ poolIdleMs: "10" }, "gw")).toThrow(/GATEWAY_POOL_IDLE_MS/);
    expect(gatewaySettings({}, "gw").credentials).toBe("optional");
    expect(gatewaySettings({ credentials: "required" }, "gw").credentials).toBe("required");
    expect(gatewaySettings({ tokensFile: "/etc/tokens" }, "gw").credentials).toBe("required");
    expect(() => gatewaySettings({ credentials: "sometimes" }, "gw")).toThrow(/GATEWAY_CREDENTIALS/);
    expect(() => gatewaySettings({ credentials: "optional", tokensFile: "/etc/tokens" }, "gw")).toThrow(/GATEWAY_CREDENTIALS/);
    expect(gatewaySettings({}, "gw").silentAfterMs).toBe(3_000);
    expect(gatewaySettings({ silentAfterMs: "1500" }, "gw").silentAfterMs).toBe(1_500);
    expect(() => gatewaySettings({ silentAfterMs: "999" }, "gw")).toThrow(/GATEWAY_SILENT_AFTER_MS/);
    expect(() => gatewaySettings({ silentAfterMs: "5000" }, "gw")).toThrow(/GATEWAY_SILENT_AFTER_MS/);
    expect(() => gatewaySettings({ listen: "nowhere" }, "gw")).toThrow(/GATEWAY_LISTEN_ADDRESS/);
  });
});

describe("gateway targets", () => {
  it("refuses loopback, link-local and the metadata address by default, and the addresses it is given", async () => {
    const t = new TargetPolicy(denyTargetsOf(undefined), ["10.9.9.9:50051"]);
    expect(await t.refusal("10.9.9.9", 50051)).toMatch(/own address/);
    expect(await t.refusal("10.9.9.9", 80)).toBeUndefined();
    expect(await t.refusal("127.0.0.1")).toMatch(/refused/);
    expect(await t.refusal("169.254.169.254")).toMatch(/refused/);
    expect(await t.refusal("[::1]")).toMatch(/refused/);
    expect(await t.refusal("localhost")).toMatch(/refused/);
    expect(await t.refusal("93.184.216.34")).toBeUndefined();
    expect(await new TargetPolicy(denyTargetsOf("none")).refusal("127.0.0.1")).toBeUndefined();
    // the machine's own addresses are refused by default, and the private ranges on request
    const own = ownAddresses().find((a) => a.endsWith("/32") && !a.startsWith("127."));
    if (own !== undefined) expect(await new TargetPolicy(denyTargetsOf(undefined)).refusal(own.split("/")[0] ?? "")).toMatch(/refused/);
    expect(await new TargetPolicy(denyTargetsOf(undefined, true)).refusal("192.168.1.10")).toMatch(/refused/);
    expect(await new TargetPolicy(denyTargetsOf(undefined)).refusal("192.168.1.10")).toBeUndefined();
    expect(() => new TargetPolicy(["10.0.0.0/33"])).toThrow(/CIDR/);
  });
});
