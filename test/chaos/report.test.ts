/**
 * What fails a chaos run besides the checker's checks: a fault whose target did not come back
 * (a broker that could not start again is an outage a fleet would meet), worker processes that
 * failed on their own.
 */
import { describe, expect, it } from "vitest";
import type { CheckResult } from "../../chaos/checker.js";
import { NO_ISOLATION } from "../../chaos/cross-site.js";
import type { FaultEvent } from "../../chaos/faults.js";
import { runFailures } from "../../chaos/report.js";

const CLEAN: CheckResult = { overlaps: [], tokenViolations: [], notBack: [], busy: [], isolation: NO_ISOLATION, failures: [] };

function fault(kind: FaultEvent["kind"], error?: string): FaultEvent {
  return { kind, target: "broker A", detail: "", at: 1_000, backAt: 2_000, ...(error === undefined ? {} : { error }) };
}

describe("runFailures", () => {
  it("passes a run whose faults all came back", () => {
    expect(runFailures({ check: CLEAN, exits: [], notStopped: [], faultEvents: [fault("broker-kill"), fault("redis-wipe")] })).toEqual([]);
  });

  it("fails a run with a fault whose target did not come back, by kind", () => {
    const events = [
      fault("broker-kill", "broker exited (1): failed to start"),
      fault("broker-term", "broker exited (1)"),
      fault("broker-kill", "broker exited (1)"),
      fault("redis-wipe"),
    ];
    expect(runFailures({ check: CLEAN, exits: [], notStopped: [], faultEvents: events })).toEqual([
      "3 faults whose target did not come back (broker-kill 2, broker-term 1)",
    ]);
  });
});
