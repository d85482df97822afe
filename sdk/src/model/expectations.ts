/**
 * Response expectations of a domain policy: what a good answer of its hosts looks like, kept in
 * the broker for clients that cannot tell themselves (the gateway; the SDK's fetch without
 * expectations of its own). Texts match case-insensitively as substrings, never as regular
 * expressions, so the TypeScript and the Python classifier read them alike.
 */

/** A policy's response expectations; every list may be empty. */
export interface PolicyExpectations {
  /** A body containing one of these is a block or captcha page (BLOCKED). */
  readonly blockMarkers: readonly string[];
  /** Markers every 2xx body contains (text, `#id`, `.class`, `css:tag.class`); one missing: BLOCKED. */
  readonly requiredMarkers: readonly string[];
  /** A 2xx body smaller than this (bytes) is a placeholder page; 0 = no minimum. */
  readonly minBytes: number;
  /** A 403 body containing one of these asks to slow down (RATE_LIMITED). */
  readonly slowDownPatterns: readonly string[];
}

/** At most this many texts in one list. */
export const MAX_EXPECTATION_TEXTS = 32;
/** At most this many characters in one text. */
export const MAX_EXPECTATION_TEXT_LENGTH = 256;
/** The largest `minBytes`: 100 MB. */
export const MAX_EXPECTATION_MIN_BYTES = 100_000_000;

const LISTS = ["blockMarkers", "requiredMarkers", "slowDownPatterns"] as const;

/** Whether `e` expects nothing (no texts, no minimum size). */
export function expectsNothing(e: PolicyExpectations | undefined): boolean {
  return e === undefined || (e.minBytes === 0 && LISTS.every((k) => e[k].length === 0));
}

/**
 * `e` checked: each list at most MAX_EXPECTATION_TEXTS texts, each text not blank and at most
 * MAX_EXPECTATION_TEXT_LENGTH characters, `minBytes` an integer in [0, MAX_EXPECTATION_MIN_BYTES].
 * Throws RangeError naming the field (in the wire's snake_case).
 */
export function checkExpectations(e: PolicyExpectations): PolicyExpectations {
  for (const k of LISTS) {
    const name = k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    const list = e[k];
    if (list.length > MAX_EXPECTATION_TEXTS) throw new RangeError(`expectations.${name}: at most ${MAX_EXPECTATION_TEXTS} texts`);
    list.forEach((text, i) => {
      if (text.trim() === "") throw new RangeError(`expectations.${name}[${i}] is blank`);
      if (text.length > MAX_EXPECTATION_TEXT_LENGTH) {
        throw new RangeError(`expectations.${name}[${i}] is longer than ${MAX_EXPECTATION_TEXT_LENGTH} characters`);
      }
    });
  }
  if (!Number.isInteger(e.minBytes) || e.minBytes < 0 || e.minBytes > MAX_EXPECTATION_MIN_BYTES) {
    throw new RangeError(`expectations.min_bytes must be an integer in [0, ${MAX_EXPECTATION_MIN_BYTES}]`);
  }
  return e;
}

/**
 * Expectations as stored or written to a file by this or an earlier version: undefined when
 * absent, malformed or expecting nothing (a stored policy is never refused for them).
 */
export function storedExpectations(value: unknown): PolicyExpectations | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const texts = (name: string): string[] => {
    const v: unknown = Reflect.get(value, name);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string" && x.trim() !== "") : [];
  };
  const min: unknown = Reflect.get(value, "minBytes");
  const e: PolicyExpectations = {
    blockMarkers: texts("blockMarkers"),
    requiredMarkers: texts("requiredMarkers"),
    minBytes: typeof min === "number" && Number.isInteger(min) && min > 0 ? min : 0,
    slowDownPatterns: texts("slowDownPatterns"),
  };
  return expectsNothing(e) ? undefined : e;
}
