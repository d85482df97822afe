/**
 * Validation of a worker's fallback claim (`Ping.claim`) at the edge: bounded, well formed, or an
 * `InvalidInputError` naming the field. A claim tells the broker what to reserve while its worker
 * is silent (docs/spec.md §7), so a malformed one is refused rather than stored in part.
 */
import { InvalidInputError, MAX_CLAIM_KEYS, MAX_CLAIM_MEMBERS, normalizeIsolationGroup } from "@proxybroker/sdk/model";
import type { FallbackClaim } from "@proxybroker/sdk/model";
import { claimFromWire } from "@proxybroker/sdk/wire";
import type { FallbackClaim as WireClaim } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { checkWorkerId } from "./validate.js";

/** A domain-key as a snapshot lists it: printable, no spaces, at most 256. */
const DOMAIN_KEY = /^[\x21-\x7e]{1,256}$/;

export function checkClaim(wire: WireClaim): FallbackClaim {
  const c = claimFromWire(wire);
  if (!Number.isSafeInteger(c.version) || c.version <= 0)
    throw new InvalidInputError("claim.version must be a positive integer below 2^53");
  if (c.members.length > MAX_CLAIM_MEMBERS) throw new InvalidInputError(`claim.members: at most ${MAX_CLAIM_MEMBERS}`);
  if (c.keys.length > MAX_CLAIM_KEYS) throw new InvalidInputError(`claim.keys: at most ${MAX_CLAIM_KEYS}`);
  for (const m of c.members) checkWorkerId(m);
  const keys = c.keys.map((k) => {
    if (!DOMAIN_KEY.test(k.domainKey)) throw new InvalidInputError("claim.keys: a domain-key must be 1 to 256 printable characters");
    if (
      k.shareKey !== k.domainKey &&
      !(k.shareKey.startsWith("#") && normalizeIsolationGroup(k.shareKey.slice(1)) === k.shareKey.slice(1))
    ) {
      throw new InvalidInputError(`claim.keys: share key "${k.shareKey.slice(0, 80)}" is neither the domain-key nor #<group>`);
    }
    if (!(k.untilMs > 0)) throw new InvalidInputError("claim.keys: until_time is required");
    return k;
  });
  return { ...c, keys };
}
