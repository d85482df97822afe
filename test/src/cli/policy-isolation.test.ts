import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { DomainPolicySchema } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { describeIsolation, isolationJson, isolationOf } from "../../../src/cli/policy-isolation.js";
import { CliExit, EXIT } from "../../../src/cli/exit.js";

/** The isolation flags of `policy set` and the column of `policy list`, without a broker (cli.test.ts runs them end to end). */
describe("policy isolation flags and column", () => {
  it("passes the group on as given (the broker checks it) and the affinity as a duration", () => {
    expect(isolationOf({})).toEqual({});
    const f = isolationOf({ isolationGroup: "market places", affinity: "10m" });
    expect(f.isolationGroup).toBe("market places");
    expect(f.affinityWindow).toEqual(durationFromMs(600_000));
  });

  it("refuses an affinity that is not a duration as a usage error naming the flag", () => {
    for (const bad of ["soon", "ten minutes"]) {
      let caught: unknown;
      try {
        isolationOf({ isolationGroup: "m", affinity: bad });
      } catch (err) {
        caught = err;
      }
      expect(caught, bad).toBeInstanceOf(CliExit);
      expect((caught as CliExit).code).toBe(EXIT.usage);
      expect((caught as CliExit).message).toMatch(/^--affinity: /);
    }
  });

  it("shows '-' without a group, the group, or group/window; JSON has both fields always", () => {
    const none = create(DomainPolicySchema, { pattern: "plain.example" });
    expect(describeIsolation(none)).toBe("-");
    expect(isolationJson(none)).toEqual({ isolationGroup: "", affinityWindowMs: 0 });
    expect(describeIsolation(create(DomainPolicySchema, { pattern: "a", isolationGroup: "market" }))).toBe("market");
    const windowed = create(DomainPolicySchema, { pattern: "a", isolationGroup: "market", affinityWindow: durationFromMs(600_000) });
    expect(describeIsolation(windowed)).toBe("market/10m");
    expect(isolationJson(windowed)).toEqual({ isolationGroup: "market", affinityWindowMs: 600_000 });
  });
});
