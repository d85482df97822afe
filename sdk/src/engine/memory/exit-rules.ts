/**
 * Internal to the in-memory engine: what an acquire checks of exit IPs (G9, store-semantics
 * §exit IPs; the exits themselves are in exits.ts).
 * - awaiting a probe: a proxy that shares its host, was never seen by a probe and shows no exit
 *   is not eligible when the request says `grantUnknownExits: false`;
 * - siblings: each sibling's pair of the domain-key counts as the proxy's own — blocked, paced
 *   (its anchor + the interval now), busy under a shadow key or held by another key of the
 *   isolation group holds the proxy back, and its live holders count toward maxConcurrency.
 */
import type { AcquireParams } from "../../model/model.js";
import type { ExitBook } from "./exits.js";
import { liveHolders, pacedUntil } from "./pair.js";
import type { DomainState } from "./pool-state.js";

/** Until when a proxy is held back under other domain-keys (shadow keys, isolation group); 0: not. */
export type ElsewhereUntil = (proxyId: string) => number;

/** What an acquire that must look at exits checks of each candidate. */
export interface ExitCheck {
  /** The proxy waits for its first probe and the request does not grant unknown exits. */
  awaitsProbe(proxyId: string): boolean;
  /** A sibling's pair is banned for the domain-key (the proxy's own is then: a session rebinds). */
  siblingBanned(proxyId: string): boolean;
  /**
   * Until when the proxy's siblings hold it back (0: they do not): their pairs' blocks and pacing,
   * their holds under other keys, and their live holders with its own against maxConcurrency.
   */
  heldUntil(proxyId: string, elsewhere: ElsewhereUntil): number;
}

/** What `exitCheck` reads. */
export interface ExitCheckInput {
  readonly exits: ExitBook;
  readonly domain: DomainState;
  readonly params: AcquireParams;
  readonly now: number;
  /** The domain-key's interval now, before jitter. */
  readonly baseMs: number;
}

/**
 * The check of an acquire; undefined when no proxy of the pool has a sibling and none it would
 * refuse waits for a probe: the acquire then reads nothing more.
 */
export function exitCheck(input: ExitCheckInput): ExitCheck | undefined {
  const { exits, domain, params, now, baseMs } = input;
  const refuseUnknown = params.grantUnknownExits === false && exits.anyAwaiting;
  if (!refuseUnknown && !exits.anyShared) return undefined;
  const siblings = (proxyId: string): string[] => (exits.anyShared ? exits.siblingsOf(proxyId, now) : []);
  // per set of exits, what its members hold back: the same for each of them (a member's own pair,
  // counted here too, holds it back anyway), so a band of one exit's proxies reads it once
  const held = new Map<string, number>();
  return {
    awaitsProbe: (proxyId) => refuseUnknown && exits.awaitsProbe(proxyId),
    siblingBanned: (proxyId) => siblings(proxyId).some((id) => (domain.pairs.get(id)?.banUntil ?? 0) > now),
    heldUntil: (proxyId, elsewhere) => {
      const key = exits.anyShared ? exits.exitKey(proxyId, now) : undefined;
      if (key === undefined) return 0;
      let until = held.get(key);
      if (until === undefined) {
        const ids = siblings(proxyId);
        until =
          ids.length === 0
            ? 0
            : exitHeldUntil({ domain, ids: [proxyId, ...ids], now, baseMs, maxConcurrency: params.maxConcurrency }, elsewhere);
        held.set(key, until);
      }
      return until;
    },
  };
}

/** The members of one set of exits, and what an acquire reads of them. */
interface ExitMembers {
  readonly domain: DomainState;
  /** Every live member, the proxy asked about included. */
  readonly ids: readonly string[];
  readonly now: number;
  readonly baseMs: number;
  readonly maxConcurrency: number;
}

/** Until when the members' pairs, and their holds under other keys, hold each member back (0: not). */
function exitHeldUntil(m: ExitMembers, elsewhere: ElsewhereUntil): number {
  let until = 0;
  for (const id of m.ids) until = Math.max(until, blockedSibling(m.domain, id, m.now, m.baseMs), elsewhere(id));
  return Math.max(until, sharedCap(m.domain, m.ids, m.now, m.maxConcurrency));
}

/** Until when a sibling's own pair is blocked or paced (holders aside: they are counted together). */
function blockedSibling(domain: DomainState, proxyId: string, now: number, baseMs: number): number {
  const pair = domain.pairs.get(proxyId);
  if (pair === undefined) return 0;
  liveHolders(pair, now); // ends the expired holders: with the release anchor they pace the pair
  const until = Math.max(pair.nextAt, pair.banUntil, pair.coolUntil, pacedUntil(domain, proxyId, baseMs));
  return until > now ? until : 0;
}

/**
 * With the live holders of every pair of the exit at maxConcurrency or more, when the earliest
 * of them ends (plus its pair's gap with the release anchor); 0 while there is room.
 */
function sharedCap(domain: DomainState, ids: readonly string[], now: number, maxConcurrency: number): number {
  let count = 0;
  let first = 0;
  for (const id of ids) {
    const pair = domain.pairs.get(id);
    if (pair === undefined) continue;
    count += liveHolders(pair, now);
    const gap = pair.anchor === "release" ? pair.intervalMs : 0;
    for (const expireAt of pair.holders.values()) if (first === 0 || expireAt + gap < first) first = expireAt + gap;
  }
  return count >= maxConcurrency ? first : 0;
}
