import { describe, expect, it } from "vitest";
import { FailingTargets } from "../../../src/gateway/failing-targets.js";

describe("targets that failed through two proxies", () => {
  it("are refused for a while with the reason, then tried again; the oldest go beyond the bound", () => {
    let now = 0;
    const f = new FailingTargets({ forMs: 30_000, max: 2, clock: () => now });
    expect(f.refusal("a.example")).toBeUndefined();
    f.note("a.example", "reset twice");
    now = 29_999;
    expect(f.refusal("a.example")).toMatch(/a\.example failed through two proxies just now \(reset twice\): not tried again for 1 s/);
    now = 30_000;
    expect(f.refusal("a.example")).toBeUndefined();
    f.note("b.example", "x");
    f.note("c.example", "x");
    f.note("d.example", "x");
    expect(f.refusal("b.example")).toBeUndefined();
    expect(f.refusal("d.example")).toBeDefined();
  });
});
