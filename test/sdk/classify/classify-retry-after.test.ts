import { describe, expect, it } from "vitest";
import { Classifier, parseHttpDate, parseRetryAfter } from "../../../sdk/src/classify/index.js";
import type { ResponseFacts } from "../../../sdk/src/classify/index.js";
import { FAKE_EPOCH_MS, fakeClock } from "../../support/fake-clock.js";

/** Retry-After as delta-seconds and as an HTTP date, relative to an injected clock. */

const NOW = FAKE_EPOCH_MS; // Tue, 14 Nov 2023 22:13:20 GMT

describe("parseRetryAfter", () => {
  it("reads delta-seconds", () => {
    expect(parseRetryAfter("30", NOW)).toBe(30_000);
    expect(parseRetryAfter(" 0 ", NOW)).toBe(0);
    expect(parseRetryAfter("86400", NOW)).toBe(86_400_000);
  });

  it("reads an IMF-fixdate relative to now, and a past date as 0", () => {
    expect(new Date(NOW).toUTCString()).toBe("Tue, 14 Nov 2023 22:13:20 GMT");
    expect(parseRetryAfter("Tue, 14 Nov 2023 22:15:20 GMT", NOW)).toBe(120_000);
    expect(parseRetryAfter("Tue, 14 Nov 2023 22:15:20 GMT", NOW + 500)).toBe(119_500);
    expect(parseRetryAfter("Tue, 14 Nov 2023 22:00:00 GMT", NOW)).toBe(0);
  });

  it("reads the obsolete RFC 850 and asctime forms", () => {
    expect(parseRetryAfter("Tuesday, 14-Nov-23 22:14:20 GMT", NOW)).toBe(60_000);
    expect(parseRetryAfter("Tue Nov 14 22:14:30 2023", NOW)).toBe(70_000);
    expect(parseHttpDate("Sun Nov  6 08:49:37 1994", NOW)).toBe(Date.UTC(1994, 10, 6, 8, 49, 37));
    // A two-digit year more than 50 years ahead belongs to the past century.
    expect(parseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT", NOW)).toBe(Date.UTC(1994, 10, 6, 8, 49, 37));
  });

  it("gives undefined for anything else", () => {
    for (const bad of [
      undefined,
      "",
      "soon",
      "-5",
      "1.5",
      "30s",
      "Tue, 14 Nov 2023 22:15:20",
      "Tue, 31 Feb 2023 10:00:00 GMT",
      "Tue, 14 Nov 2023 25:00:00 GMT",
      "2023-11-14T22:15:20Z",
    ]) {
      expect(parseRetryAfter(bad, NOW), String(bad)).toBeUndefined();
    }
  });
});

describe("Retry-After in classifications", () => {
  const r429 = (retryAfter?: string): ResponseFacts => ({
    status: 429,
    url: "https://api.example.com/items",
    headers: retryAfter === undefined ? {} : { "retry-after": retryAfter },
    body: "",
  });

  it("429 with Retry-After in seconds", () => {
    const c = new Classifier({ now: fakeClock().now }).classify(r429("30"));
    expect(c).toEqual({ kind: "RATE_LIMITED", httpStatus: 429, retryAfterMs: 30_000, reason: "429 with Retry-After 30 s" });
  });

  it("429 with Retry-After as an HTTP date uses the injected clock", () => {
    const clock = fakeClock();
    const classifier = new Classifier({ now: () => clock.now() });
    const header = "Tue, 14 Nov 2023 22:15:20 GMT";
    expect(classifier.classify(r429(header))).toMatchObject({ retryAfterMs: 120_000, reason: "429 with Retry-After 120 s (HTTP date)" });
    clock.advance(100_000);
    expect(classifier.classify(r429(header)).retryAfterMs).toBe(20_000);
  });

  it("an invalid or missing Retry-After leaves retryAfterMs 0 and says so", () => {
    const classifier = new Classifier({ now: fakeClock().now });
    expect(classifier.classify(r429("soon"))).toMatchObject({
      kind: "RATE_LIMITED",
      retryAfterMs: 0,
      reason: '429 with invalid Retry-After "soon"',
    });
    expect(classifier.classify(r429())).toMatchObject({ kind: "RATE_LIMITED", retryAfterMs: 0 });
  });

  it("a huge Retry-After is capped at maxRetryAfterMs (configurable per domain)", () => {
    const classifier = new Classifier({ now: fakeClock().now, perDomain: { "api.example.com": { maxRetryAfterMs: 60_000 } } });
    const c = classifier.classify(r429("7200"));
    expect(c.retryAfterMs).toBe(60_000);
    expect(c.reason).toBe("429 with Retry-After 7200 s, capped to 60 s");
    expect(new Classifier({ now: fakeClock().now }).classify(r429("7200")).retryAfterMs).toBe(3_600_000);
  });

  it("Retry-After is reported only for RATE_LIMITED", () => {
    const c = new Classifier({ now: fakeClock().now }).classify({ ...r429("30"), status: 503 });
    expect(c).toMatchObject({ kind: "TARGET_ERROR", retryAfterMs: 0 });
  });
});
