/** CHAOS_ISOLATION as the harness reads it: unset = today's run, a name the broker takes, or a refusal before anything starts. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { readOptions } from "../../chaos/options.js";

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("CHAOS_ISOLATION", () => {
  it("is no group when unset or empty", () => {
    vi.stubEnv("CHAOS_ISOLATION", "");
    expect(readOptions().isolation).toBeUndefined();
  });

  it("is the group's name, as the broker stores it", () => {
    vi.stubEnv("CHAOS_ISOLATION", " Market ");
    expect(readOptions().isolation).toBe("market");
  });

  it("refuses a name the broker would refuse, and a run with one site", () => {
    vi.stubEnv("CHAOS_ISOLATION", "two words");
    expect(() => readOptions()).toThrow(/CHAOS_ISOLATION/);
    vi.stubEnv("CHAOS_ISOLATION", "market");
    vi.stubEnv("CHAOS_SITES", "1");
    expect(() => readOptions()).toThrow(/CHAOS_SITES ≥ 2/);
  });
});
