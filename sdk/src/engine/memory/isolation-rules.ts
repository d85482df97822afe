/**
 * Internal to the in-memory engine: what grants, renewals, releases and acquires do with the
 * holds of isolation groups (G8; the holds themselves are in isolation.ts).
 * - grant of a grouped key: hold = max(hold, expiry + affinity); the pair remembers the group
 *   and affinity, which its renewals and releases use;
 * - renewal: hold = max(hold, new expiry + affinity);
 * - release of a live lease leaving no live holder of the pair: hold = release + affinity
 *   (dropped when that is not after now); an expired lease keeps its hold;
 * - acquire: a proxy another domain-key holds in the acquire's group or a former group is not
 *   eligible until that hold ends.
 */
import type { AcquireParams } from "../../model/model.js";
import { checkedGroups, pairIsolationOf, type IsolationHolds } from "./isolation.js";
import type { PairState } from "./records.js";

/** One pair's holds as an operation on it writes them. */
export interface PairHold {
  readonly holds: IsolationHolds;
  readonly pair: PairState;
  readonly proxyId: string;
  readonly domainKey: string;
}

/** When a lease of the pair is granted or renewed, and its expiry. */
export interface LeaseTimes {
  readonly now: number;
  readonly expireAt: number;
}

/** A grant at `now` under `params` of a lease expiring at `expireAt`. */
export function holdOnGrant(at: PairHold, params: AcquireParams, times: LeaseTimes): void {
  at.pair.isolation = pairIsolationOf(params.isolation);
  raiseTo(at, times.expireAt, times.now);
}

/** A renewal at `now` of a lease of the pair to `expireAt`. */
export function holdOnRenew(at: PairHold, times: LeaseTimes): void {
  raiseTo(at, times.expireAt, times.now);
}

/** A release at `now` of a live lease of the pair, its holder already dropped. */
export function holdOnRelease(at: PairHold, now: number): void {
  const { group, affinityMs } = at.pair.isolation;
  if (group === "") return;
  for (const expireAt of at.pair.holders.values()) if (expireAt > now) return; // another live holder keeps it
  at.holds.lower({ group, proxyId: at.proxyId, domainKey: at.domainKey }, now + affinityMs, now);
}

function raiseTo(at: PairHold, expireAt: number, now: number): void {
  const { group, affinityMs } = at.pair.isolation;
  if (group !== "") at.holds.raise({ group, proxyId: at.proxyId, domainKey: at.domainKey }, expireAt + affinityMs, now);
}

/** What an acquire that presents `isolation` checks of each candidate. */
export interface IsolationCheck {
  /** Until when another domain-key holds the proxy in a checked group (0: none at `now`). */
  heldUntil(proxyId: string, now: number): number;
  /**
   * The proxies held in the acquire's group now (by any key; former groups not counted): each may
   * be held back, so the band widens by them as by busy pairs.
   */
  readonly heldN: number;
}

/** The earliest expiry of a live lease of `domainKey` on `proxyId` (0: none at `now`). */
export type LiveUnder = (domainKey: string, proxyId: string, now: number) => number;

/**
 * The check of an acquire at `now`; undefined when it presents no isolation, or its groups record
 * no hold and no key joined its group lately. The keys that joined (`joinedKeys`) hold a proxy by
 * their live leases (`liveUnder`), which no group records.
 */
export function isolationCheck(
  holds: IsolationHolds,
  params: AcquireParams,
  now: number,
  liveUnder: LiveUnder,
): IsolationCheck | undefined {
  if (params.isolation === undefined) return undefined;
  const groups = checkedGroups(params.isolation);
  const joined = params.isolation.joinedKeys ?? [];
  if (joined.length === 0 && !groups.some((group) => holds.has(group))) return undefined;
  const group = params.isolation.group;
  return {
    heldUntil: (proxyId, at) => {
      let until = holds.heldByOthers(groups, proxyId, params.domainKey, at);
      for (const key of joined) until = Math.max(until, liveUnder(key, proxyId, at));
      return until;
    },
    heldN: group === "" ? 0 : holds.heldCount(group, now),
  };
}
