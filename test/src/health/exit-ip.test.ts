import { describe, expect, it } from "vitest";
import { exitIpOf } from "../../../src/health/exit-ip.js";

describe("exitIpOf (the exit IP a health check answer shows)", () => {
  it("reads ip or origin of a JSON answer, the first of a list", () => {
    expect(exitIpOf('{"ip":"203.0.113.7"}')).toBe("203.0.113.7");
    expect(exitIpOf('{"origin":"198.51.100.2, 10.0.0.1"}')).toBe("198.51.100.2");
    expect(exitIpOf('{"ip":"2001:DB8::1"}')).toBe("2001:db8::1");
    expect(exitIpOf('{"ip":"::ffff:127.0.0.2"}')).toBe("127.0.0.2");
  });

  it("reads a body that is one address", () => {
    expect(exitIpOf("203.0.113.9\n")).toBe("203.0.113.9");
    expect(exitIpOf("[2001:db8::2]")).toBe("2001:db8::2");
  });

  it("shows none for anything else", () => {
    for (const body of [
      "",
      "ok",
      "<html>203.0.113.7</html>",
      '{"ip":42}',
      '{"ip":"not-an-ip"}',
      "{broken",
      "null",
      "203.0.113.7 203.0.113.8",
      "999.1.1.1",
    ]) {
      expect(exitIpOf(body)).toBe("");
    }
  });
});
