/**
 * Fallback shares that follow demand (docs/spec.md §7): which pairs of a domain-key this worker
 * may lease from its fallback pool, from the domain-keys the broker listed for each live worker.
 *
 * The rule, for this worker X and a domain-key k:
 * - X uses k only when it is *established* for k — every membership list since the first that
 *   listed X with k named it so, over at least a membership period + 1 s, fetched while the broker
 *   answered (so every other worker has refreshed its lists since and lists X with k too) — and
 *   only while the broker will list it for longer than a margin (after that, a worker refreshing
 *   may no longer see X with k);
 * - when X is the only worker listed with k (in the lists of the minute before the latest one),
 *   X uses every proxy for k ("sole"); otherwise only its rendezvous share of the proxies
 *   ("share"). In fallback no list arrives, and the answer stays what the last lists made it.
 *   "Sole" also needs the latest list to be at most `MAX_VIEW_LAG_MS` older than X's last
 *   contact with the broker: the broker, reserving k whole for X while X is silent, counts
 *   another worker's use only when X's lists surely showed it (src/lease/list-lags.ts).
 *
 * Why no pair is used by two workers in fallback: if X and Y both use k, both are established, so
 * each lists the other with k; neither is then alone on k, and both use their shares, which are
 * disjoint. A worker starting on a new domain-key in fallback gets none of it.
 *
 * Isolation groups (G8): "alone" is decided per share key (shareKeyOf, sdk/src/model/isolation.ts), not per domain-key —
 * X counts as alone on k only when no other worker is listed with any domain-key of k's group.
 * X listed with k1 and Y with k2 of one group G both see the other on `#G`, so both use their
 * disjoint shares, and no proxy is on two keys of G at once. Being established stays per
 * domain-key: X uses only the keys it is listed with (which implies being listed with their share
 * key), so that a broker that reserves by domain-key still covers every pair X may use.
 */
import type { DomainPolicySpec } from "../model/model.js";
import type { ClaimedKey } from "../model/fallback-claim.js";
import { shareKeyOf } from "../model/isolation.js";

/** A worker's listing for a domain-key, as a snapshot or membership list carries it. */
export interface DomainListing {
  readonly domainKey: string;
  /** How long the broker had listed it, when the list was made (ms). */
  readonly listedForMs: number;
  /** How long the broker would still list it without a new lease, when the list was made (ms). */
  readonly expiresInMs: number;
}

/** How much older than the last contact with the broker the latest list may be for a "sole" route. */
export const MAX_VIEW_LAG_MS = 30_000;
/** Domain-keys whose share key is remembered (beyond it the memo starts over). */
const SHARE_KEYS_MAX = 4_096;

/** Where an acquire for a domain-key is served from: every proxy, the share, or nowhere. */
export type DomainRoute = "sole" | "share" | "none";

export interface DomainSharesOptions {
  /** This worker's id. */
  readonly self: string;
  /** A listing of this worker is used once lists have named it for this long (membership period + 1 s). */
  readonly knownAfterMs: number;
  /** A listing is not used this close to its end: covers the time a list takes to arrive. */
  readonly expiryMarginMs: number;
  /** Other workers' listings count this long after the last list that named them. */
  readonly rememberMs: number;
}

interface OwnListing {
  /** When the lists started naming it (without a gap). */
  readonly since: number;
  /** The latest list that named it. */
  last: number;
  /** When the broker drops it, as of the latest list. */
  expiresAt: number;
}

export class DomainShares {
  /** Whether lists carry domain-keys at all (a broker that lists none: every domain-key is "share"). */
  private listed = false;
  private readonly own = new Map<string, OwnListing>();
  /** domain-key → worker → when a list last named that worker with it (this worker excluded). */
  private readonly others = new Map<string, Map<string, number>>();
  /** The policies share keys are taken from (see `usePolicies`). */
  private policies: readonly DomainPolicySpec[] = [];
  /** domain-key → its share key under `policies`. */
  private readonly shareKeys = new Map<string, string>();
  /** `others` by share key (worker → the latest time); undefined: to be derived again. */
  private othersByShare: Map<string, Map<string, number>> | undefined;
  /**
   * When the latest list arrived. Others' listings are remembered relative to it, not to the
   * clock: in fallback no list arrives, and what the last lists said must hold until the next.
   */
  private lastListAt = Number.NEGATIVE_INFINITY;
  /** The last contact with the broker (an answer of any kind). */
  private lastContactAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly opts: DomainSharesOptions) {}

  /**
   * The policies of the pool in use: domain-keys of one isolation group share one share key
   * (shareKeyOf, sdk/src/model/isolation.ts), on which the others' listings count. Default none (every key is its own).
   */
  usePolicies(policies: readonly DomainPolicySpec[]): void {
    if (policies === this.policies) return;
    this.policies = policies;
    this.shareKeys.clear();
    this.othersByShare = undefined;
  }

  /** The share key of `domainKey` under the policies in use. */
  shareKey(domainKey: string): string {
    let key = this.shareKeys.get(domainKey);
    if (key === undefined) {
      if (this.shareKeys.size >= SHARE_KEYS_MAX) this.shareKeys.clear();
      key = shareKeyOf(this.policies, domainKey);
      this.shareKeys.set(domainKey, key);
    }
    return key;
  }

  /**
   * A list fetched from the broker at `now` (it answered): each worker's listings. `fromFile`: a
   * list saved by an earlier run, whose listings of this worker count for as long as the broker
   * had listed them (the others knew them when the file was written).
   */
  update(byWorker: ReadonlyMap<string, readonly DomainListing[]>, now: number, fromFile = false): void {
    this.listed = true;
    this.lastListAt = now;
    if (!fromFile) this.contact(now);
    const mine = new Map((byWorker.get(this.opts.self) ?? []).map((l) => [l.domainKey, l]));
    for (const key of [...this.own.keys()]) if (!mine.has(key)) this.own.delete(key);
    for (const [key, l] of mine) {
      const was = this.own.get(key);
      const expiresAt = now + l.expiresInMs;
      if (was === undefined) this.own.set(key, { since: fromFile ? now - l.listedForMs : now, last: now, expiresAt });
      else {
        was.last = now;
        was.expiresAt = expiresAt;
      }
    }
    for (const [worker, listings] of byWorker) {
      if (worker === this.opts.self) continue;
      for (const l of listings) {
        const users = this.others.get(l.domainKey) ?? new Map<string, number>();
        users.set(worker, now);
        this.others.set(l.domainKey, users);
      }
    }
    this.forget(now);
    this.othersByShare = undefined;
  }

  /** The broker answered at `now`. */
  contact(now: number): void {
    if (now > this.lastContactAt) this.lastContactAt = now;
  }

  /**
   * Where an acquire for `domainKey` is served from at `now`: "sole" only when no other worker is
   * listed with a domain-key of the same share key.
   */
  route(domainKey: string, now: number): DomainRoute {
    if (!this.listed) return "share";
    if (!this.usable(domainKey, now)) return "none";
    if (this.othersOn(this.shareKey(domainKey)) || this.lastContactAt - this.lastListAt > MAX_VIEW_LAG_MS) return "share";
    return "sole";
  }

  /** Whether some domain-key can be served at `now` (always, when lists carry none). */
  any(now: number): boolean {
    if (!this.listed) return true;
    for (const key of this.own.keys()) if (this.usable(key, now)) return true;
    return false;
  }

  /** The domain-keys this worker is established for at `now`. */
  established(now: number): string[] {
    return [...this.own.keys()].filter((k) => this.usable(k, now));
  }

  /**
   * The keys of this worker's claim at `now` (docs/spec.md §7): every domain-key it is established
   * for, with its share key, whether it is served whole ("sole") or from the share, and until
   * when (its listing's end, less the margin).
   */
  claimKeys(now: number): ClaimedKey[] {
    return this.established(now)
      .sort()
      .map((domainKey) => {
        const own = this.own.get(domainKey);
        return {
          domainKey,
          shareKey: this.shareKey(domainKey),
          whole: this.route(domainKey, now) === "sole",
          untilMs: (own?.expiresAt ?? now) - this.opts.expiryMarginMs,
        };
      });
  }

  /** The first moment a listing of this worker can become established (undefined: none pending). */
  nextEstablishedAt(now: number): number | undefined {
    let at: number | undefined;
    for (const [key, l] of this.own) {
      if (this.usable(key, now)) continue;
      const when = l.since + this.opts.knownAfterMs;
      if (when > now && (at === undefined || when < at)) at = when;
    }
    return at;
  }

  /** The lists carry domain-keys, and none names this worker with `domainKey` yet. */
  awaitsListing(domainKey: string): boolean {
    return this.listed && !this.own.has(domainKey);
  }

  /** Whether the lists carry domain-keys (the rule applies). */
  get enforced(): boolean {
    return this.listed;
  }

  private usable(domainKey: string, now: number): boolean {
    const l = this.own.get(domainKey);
    return l !== undefined && l.last - l.since >= this.opts.knownAfterMs && l.expiresAt - this.opts.expiryMarginMs > now;
  }

  /** Whether another worker's listing with a domain-key of `shareKey` still counts. */
  private othersOn(shareKey: string): boolean {
    const users = this.byShare().get(shareKey);
    if (users === undefined) return false;
    for (const at of users.values()) if (at >= this.lastListAt - this.opts.rememberMs) return true;
    return false;
  }

  /** `others` keyed by share key (derived once per list or policy change). */
  private byShare(): Map<string, Map<string, number>> {
    if (this.othersByShare !== undefined) return this.othersByShare;
    const out = new Map<string, Map<string, number>>();
    for (const [key, users] of this.others) {
      const shareKey = this.shareKey(key);
      const merged = out.get(shareKey) ?? new Map<string, number>();
      for (const [worker, at] of users) merged.set(worker, Math.max(merged.get(worker) ?? at, at));
      out.set(shareKey, merged);
    }
    this.othersByShare = out;
    return out;
  }

  private forget(now: number): void {
    for (const [key, users] of this.others) {
      for (const [worker, at] of users) if (at < now - this.opts.rememberMs) users.delete(worker);
      if (users.size === 0) this.others.delete(key);
    }
  }
}
