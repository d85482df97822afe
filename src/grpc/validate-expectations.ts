/**
 * The edge's check of a domain policy's response expectations (SetDomainPolicy): sizes and
 * lengths within the limits, and every required marker one the classifiers understand.
 */
import { parseMarker } from "@proxybroker/sdk";
import { checkExpectations, InvalidInputError } from "@proxybroker/sdk/model";
import type { PolicyExpectations } from "@proxybroker/sdk/model";

/** `e` checked; throws InvalidInputError (INVALID_ARGUMENT) naming the field at fault. */
export function checkPolicyExpectations(e: PolicyExpectations): PolicyExpectations {
  try {
    checkExpectations(e);
    e.requiredMarkers.forEach((m, i) => {
      try {
        parseMarker(m);
      } catch (err) {
        throw new RangeError(`expectations.required_markers[${i}]: ${err instanceof Error ? err.message : String(err)}`);
      }
    });
  } catch (err) {
    if (err instanceof RangeError) throw new InvalidInputError(err.message);
    throw err;
  }
  return e;
}
