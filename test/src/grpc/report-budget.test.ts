/** Reported outcomes per caller (src/grpc/report-budget.ts), on a fake clock. */
import { describe, expect, it } from "vitest";
import { ReportBudget } from "../../../src/grpc/report-budget.js";
import { fakeClock } from "../../support/fake-clock.js";

describe("ReportBudget", () => {
  it("gives each caller perMinute outcomes, refills them continuously, and takes a call whole or not at all", () => {
    const clock = fakeClock();
    const b = new ReportBudget({ perMinute: 6_000, clock: () => clock.now() });
    expect(b.take("a", 6_000)).toBe(0);
    // empty: 100 more are 1 s of refill away; nothing is taken
    expect(b.take("a", 100)).toBe(1_000);
    expect(b.take("b", 100)).toBe(0);
    clock.advance(500);
    expect(b.take("a", 100)).toBe(500);
    clock.advance(500);
    expect(b.take("a", 100)).toBe(0);
    // never more than a minute, even for a call larger than the bucket
    expect(b.take("a", 1_000_000)).toBe(60_000);
  });

  it("forgets callers whose bucket refilled, and shares one bucket among callers beyond maxCallers", () => {
    const clock = fakeClock();
    const b = new ReportBudget({ perMinute: 60, clock: () => clock.now(), maxCallers: 2 });
    expect(b.take("a", 60)).toBe(0);
    expect(b.take("b", 60)).toBe(0);
    expect(b.take("c", 60)).toBe(0); // the shared bucket
    expect(b.take("d", 1)).toBeGreaterThan(0); // shares c's, now empty
    expect(b.size).toBe(3);
    clock.advance(61_000);
    expect(b.take("e", 1)).toBe(0);
    expect(b.size).toBe(1);
  });
});
