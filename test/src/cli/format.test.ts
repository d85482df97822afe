import { describe, expect, it } from "vitest";
import { eventDetail, formatMs, parseDuration } from "../../../src/cli/format.js";

describe("CLI formatting", () => {
  it("shows durations the way they are typed", () => {
    expect([0, 250, 1_500, 90_000, 7_200_000].map(formatMs)).toEqual(["0", "250ms", "1.5s", "1.5m", "2h"]);
    expect(["500ms", "30s", "10m", "2h"].map(parseDuration)).toEqual([500, 30_000, 600_000, 7_200_000]);
  });

  it("shows how long a ban, cool-down or quarantine lasts, and leaves other details as they are", () => {
    const at = Date.UTC(2026, 11, 1, 12, 0, 0);
    expect(eventDetail("BAN", String(at + 3_600_000), at)).toBe("for 1h (until 13:00:00Z)");
    expect(eventDetail("COOL_DOWN", String(at + 1_500), at)).toBe("for 1.5s (until 12:00:01Z)");
    expect(eventDetail("QUARANTINE", String(at + 600_000), at)).toBe("for 10m (until 12:10:00Z)");
    expect(eventDetail("ADMIN", "ban on shop for 1800 s", at)).toBe("ban on shop for 1800 s");
    expect(eventDetail("BAN", "not a time", at)).toBe("not a time");
  });
});
