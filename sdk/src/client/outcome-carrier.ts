import { OUTCOME_KIND_NAMES } from "../model/model.js";
import type { OutcomeKindName } from "../model/model.js";
import type { LeaseOutcome } from "./lease.js";

const KINDS: ReadonlySet<string> = new Set(OUTCOME_KIND_NAMES);

/**
 * Throw this from a `withLease` callback to release with a given outcome, e.g.
 * `throw new OutcomeError({ kind: "BLOCKED", httpStatus: 403 }, "block page")`.
 */
export class OutcomeError extends Error {
  override readonly name = "OutcomeError";
  constructor(
    readonly outcome: LeaseOutcome,
    message = `request ended with ${outcome.kind}`,
  ) {
    super(message);
  }
}

/** The outcome a value or error carries in an `outcome` field, if it has a valid one. */
export function carriedOutcome(x: unknown): LeaseOutcome | undefined {
  if (typeof x !== "object" || x === null || !("outcome" in x)) return undefined;
  const o: unknown = x.outcome;
  if (typeof o !== "object" || o === null || !("kind" in o) || typeof o.kind !== "string" || !KINDS.has(o.kind)) return undefined;
  return o as LeaseOutcome & { kind: OutcomeKindName };
}
