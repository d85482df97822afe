import { describe, expect, it } from "vitest";
import { shutdownSignals } from "../../../src/gateway/shutdown-signals.js";

describe("the gateway's shutdown signals", () => {
  it("the first stops, another within the second is the same shutdown, a later one cuts", () => {
    let now = 0;
    const s = shutdownSignals({ sameWithinMs: 1_000, clock: () => now });
    expect(s.signal()).toBe("stop");
    now = 1;
    expect(s.signal()).toBe("same");
    now = 999;
    expect(s.signal()).toBe("same");
    now = 1_000;
    expect(s.signal()).toBe("cut");
  });
});
