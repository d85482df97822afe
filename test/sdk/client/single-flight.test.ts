import { describe, expect, it } from "vitest";
import { singleFlight } from "../../../sdk/src/client/single-flight.js";

describe("singleFlight", () => {
  it("skips a call while a run is in progress, runs again once it ended, also after a failure", async () => {
    let runs = 0;
    let finish: () => void = () => undefined;
    let fail = false;
    const task = singleFlight(async () => {
      runs += 1;
      await new Promise<void>((resolve) => {
        finish = resolve;
      });
      if (fail) throw new Error("failed");
    });
    const first = task();
    await task(); // resolves at once: the first run is still going
    expect(runs).toBe(1);
    finish();
    await first;
    fail = true;
    const second = task();
    expect(runs).toBe(2);
    finish();
    await expect(second).rejects.toThrow("failed");
    const third = task();
    expect(runs).toBe(3);
    fail = false;
    finish();
    await third;
  });
});
