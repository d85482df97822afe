/**
 * How a chaos run measures the fleet's way back from a Redis failover: the brokers' hold lines,
 * the baseline before the kill, and the first 2 s at ≥ 0.8 × it — late when that is more than
 * 2 s after the hold's end.
 */
import { describe, expect, it } from "vitest";
import type { FaultEvent } from "../../chaos/faults.js";
import type { LeaseRecord } from "../../chaos/records.js";
import { failoverRecoveries, holdLines, lateRecoveries } from "../../chaos/recovery.js";
import { runFailures } from "../../chaos/report.js";
import { NO_ISOLATION } from "../../chaos/cross-site.js";

const KILL = Date.UTC(2026, 11, 7, 12, 0, 0);

function grants(from: number, to: number, perS: number, source: "broker" | "fallback" = "broker"): LeaseRecord[] {
  const out: LeaseRecord[] = [];
  for (let t = from; t < to; t += 1_000 / perS) {
    out.push({
      worker: "w",
      gen: 0,
      kind: "sdk",
      api: "acquire",
      lease: `l${t}`,
      proxy: "p",
      domain: "d",
      token: "1",
      source,
      grantedAt: t,
    });
  }
  return out;
}

const failover: FaultEvent = {
  kind: "redis-failover",
  target: "master :7000",
  detail: "",
  at: KILL,
  backAt: KILL + 9_000,
  marks: { killedAt: KILL, promotedAt: KILL + 2_000, rejoinedAt: KILL + 9_000 },
};

function holdLog(at: number, until: number): string {
  return JSON.stringify({
    level: "warn",
    time: new Date(at).toISOString(),
    msg: `writes to pool default may have been lost: grants held until ${new Date(until).toISOString()} (the longest lease TTL granted there lately)`,
  });
}

describe("holdLines", () => {
  it("reads the pool, when it was noticed and when it ends; skips other lines", () => {
    const out = [holdLog(KILL + 3_000, KILL + 5_000), '{"msg":"listening"}', "not json grants held until x"].join("\n");
    expect(holdLines(out)).toEqual([{ pool: "default", at: KILL + 3_000, until: KILL + 5_000 }]);
  });
});

describe("failoverRecoveries", () => {
  const holds = holdLines(holdLog(KILL + 3_000, KILL + 5_000));

  it("a fleet back at full speed right after the hold is on time", () => {
    const leases = [...grants(KILL - 5_000, KILL, 50), ...grants(KILL + 5_000, KILL + 20_000, 50)];
    const [r] = failoverRecoveries({ events: [failover], leases, holds, endAt: KILL + 20_000 });
    expect(r?.promotedMs).toBe(2_000);
    expect(r?.hold).toEqual({ noticedMs: 3_000, lengthMs: 2_000, endMs: 5_000 });
    expect(r?.baselinePerS).toBe(50);
    expect(r?.firstBrokerGrantMs).toBe(5_000);
    // the first 2 s window averaging ≥ 40/s: 1.6 s of it at 50/s, so it starts 400 ms before they are back
    expect(r?.fleetBackMs).toBe(4_600);
    expect(r?.boundMs).toBe(7_000);
    expect(lateRecoveries(r === undefined ? [] : [r])).toEqual([]);
  });

  it("a fleet still slow 2 s after the hold is late, and fails the run", () => {
    const leases = [
      ...grants(KILL - 5_000, KILL, 50),
      ...grants(KILL + 5_000, KILL + 12_000, 10),
      ...grants(KILL + 12_000, KILL + 20_000, 50),
    ];
    const recoveries = failoverRecoveries({ events: [failover], leases, holds, endAt: KILL + 20_000 });
    expect(recoveries[0]?.fleetBackMs).toBeGreaterThan(7_000);
    expect(lateRecoveries(recoveries)).toHaveLength(1);
    const clean = { overlaps: [], tokenViolations: [], notBack: [], busy: [], isolation: NO_ISOLATION, failures: [] };
    expect(runFailures({ check: clean, exits: [], notStopped: [], faultEvents: [failover], recoveries })).toEqual([
      "1 Redis failovers after which the fleet was not back at full speed within 2000 ms of the hold's end",
    ]);
  });

  it("fallback leases count for the fleet, not for the broker", () => {
    const leases = [...grants(KILL - 5_000, KILL, 50), ...grants(KILL + 1_000, KILL + 20_000, 50, "fallback")];
    const [r] = failoverRecoveries({ events: [failover], leases, holds: [], endAt: KILL + 20_000 });
    expect(r?.hold).toBeUndefined();
    expect(r?.fleetBackMs).toBeLessThanOrEqual(1_000);
    expect(r?.brokerBackMs).toBeUndefined();
    expect(r?.boundMs).toBe(4_000);
  });
});
