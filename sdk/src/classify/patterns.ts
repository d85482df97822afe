import type { TextPattern } from "./types.js";

/**
 * Text patterns of the rules: a RegExp, or a string matched case-insensitively as a substring.
 * Internal to the classifier.
 */

/** A copy safe for repeated `test` calls (no `g`/`y` state); strings are lowercased. Throws on "". */
export function compilePattern(pattern: TextPattern): TextPattern {
  if (typeof pattern === "string") {
    if (pattern === "") throw new RangeError("an empty string pattern would match everything");
    return pattern.toLowerCase();
  }
  if (!(pattern instanceof RegExp)) throw new TypeError(`pattern ${String(pattern)} is neither a RegExp nor a string`);
  return pattern.global || pattern.sticky ? new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, "")) : pattern;
}

/**
 * The first compiled pattern that matches `text`, if any. `lower` is `text` lowercased, passed
 * when the caller already has it.
 */
export function findMatch(patterns: readonly TextPattern[], text: string, lower?: string): TextPattern | undefined {
  let lowered = lower;
  for (const p of patterns) {
    if (typeof p === "string") {
      lowered ??= text.toLowerCase();
      if (lowered.includes(p)) return p;
    } else if (p.test(text)) {
      return p;
    }
  }
  return undefined;
}

/** How a pattern appears in a reason: `/captcha/i` or `"slow down"`. */
export function describePattern(pattern: TextPattern): string {
  return typeof pattern === "string" ? JSON.stringify(pattern) : String(pattern);
}
