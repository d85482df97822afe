/**
 * A worker's fallback claim (docs/spec.md §7): what it may lease from its fallback pool while the
 * broker is unreachable — per domain-key it is established for, every proxy (`whole`: no other
 * worker is listed with the key's share key) or its rendezvous share over `members`. The worker
 * computes it from the lists the broker sent it (sdk/src/fallback/domain-shares.ts) and uses a
 * claim only once the broker acknowledged it; the broker reserves what a silent worker's claims
 * name. Both read a claim through `claimedPairs` and `claimRoute`: one rule, two callers, so the
 * broker reserves exactly the pairs the worker may use.
 */
import { shareOfGroups, type ShareMember } from "./exit-groups.js";

/** One domain-key of a claim. */
export interface ClaimedKey {
  readonly domainKey: string;
  /** The domain-key itself, or `#<group>` for a key of an isolation group (shareKeyOf). */
  readonly shareKey: string;
  /** Every proxy for it; else the worker's rendezvous share. */
  readonly whole: boolean;
  /** Epoch ms: the worker stops using it then (its listing ends). */
  readonly untilMs: number;
}

export interface FallbackClaim {
  /** Increases with each new claim of a worker (a new process starts above the last). */
  readonly version: number;
  /** The workers the rendezvous share is cut over (the worker itself included). */
  readonly members: readonly string[];
  readonly keys: readonly ClaimedKey[];
}

/** The claim of a worker that may use nothing. */
export const EMPTY_CLAIM: FallbackClaim = Object.freeze({ version: 0, members: Object.freeze([]), keys: Object.freeze([]) });

/** Where a claim lets its worker serve a domain-key from: every proxy, its share, or nowhere. */
export type ClaimRoute = "sole" | "share" | "none";

/** What a claim lets `self` lease at `now`: the keys served whole, those served from its share, and the share. */
export interface ClaimedPairs {
  readonly whole: readonly ClaimedKey[];
  readonly shared: readonly ClaimedKey[];
  /**
   * The proxies of `proxies` in the rendezvous share of `self` over the claim's members, cut per
   * exit group (G9: exit-groups.ts).
   */
  readonly share: readonly string[];
}

/** The keys of `claim` still in use at `now`. */
function liveKeys(claim: FallbackClaim, now: number): ClaimedKey[] {
  return claim.keys.filter((k) => k.untilMs > now);
}

/**
 * The pairs `claim` lets `self` lease at `now`, among `proxies`: ids, or ids with their exit IPs
 * (proxies of one exit go to one worker; an id alone is a group of its own).
 */
export function claimedPairs(claim: FallbackClaim, self: string, proxies: readonly ShareMember[], now: number): ClaimedPairs {
  const keys = liveKeys(claim, now);
  const whole = keys.filter((k) => k.whole);
  const shared = keys.filter((k) => !k.whole);
  return { whole, shared, share: shared.length === 0 ? [] : shareOfGroups(proxies, claim.members, self) };
}

/** Where `claim` lets its worker serve `domainKey` from at `now`. */
export function claimRoute(claim: FallbackClaim, domainKey: string, now: number): ClaimRoute {
  const k = claim.keys.find((x) => x.domainKey === domainKey);
  if (k === undefined || k.untilMs <= now) return "none";
  return k.whole ? "sole" : "share";
}

/** Whether `claim` names anything usable at `now`. */
export function claimsAnything(claim: FallbackClaim, now: number): boolean {
  return claim.keys.some((k) => k.untilMs > now);
}

/** Whether two claims say the same (the version aside). */
export function sameClaim(a: FallbackClaim, b: FallbackClaim): boolean {
  if (a.members.length !== b.members.length || a.keys.length !== b.keys.length) return false;
  if (a.members.some((m, i) => m !== b.members[i])) return false;
  return a.keys.every((k, i) => {
    const o = b.keys[i];
    return o !== undefined && o.domainKey === k.domainKey && o.shareKey === k.shareKey && o.whole === k.whole && o.untilMs === k.untilMs;
  });
}

/** Limits a stored claim keeps to (a worker lists at most 64 domain-keys; members: the live workers with a fallback pool). */
export const MAX_CLAIM_KEYS = 64;
export const MAX_CLAIM_MEMBERS = 2_000;
