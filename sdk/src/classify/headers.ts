import type { ResponseFacts } from "./types.js";

/** Header access for the classifier (internal). */

/** A header's value; names are expected in lowercase, other spellings are found too. */
export function header(facts: ResponseFacts, name: string): string | undefined {
  const direct = facts.headers[name];
  if (direct !== undefined) return direct;
  for (const [k, v] of Object.entries(facts.headers)) {
    if (k.toLowerCase() === name) return v;
  }
  return undefined;
}
