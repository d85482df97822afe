import type { OutcomeInput, ReleaseResult, RenewResult } from "../model/model.js";
import type { ScoringConfig } from "../model/scoring.js";
import { DEFAULT_SCORING } from "../model/scoring.js";
import { InvalidInputError } from "../model/domain-key.js";
import { BROKER_DEFAULTS } from "../model/broker-defaults.js";
import type { ProxySpecInput } from "../model/model.js";
import type { ClaimedKey, FallbackClaim } from "../model/fallback-claim.js";
import { DEFAULT_MAX_BUFFERED_OUTCOMES, FallbackOutcomes, type BufferedOutcome } from "./outcome-buffer.js";
import type { PoolSnapshot } from "./snapshot.js";
import type { DomainRoute } from "./domain-shares.js";
import { PoolMembership } from "./pool-membership.js";
import type { MembershipUpdate } from "./pool-membership.js";
import {
  FallbackLeases,
  type FallbackAcquireRequest,
  type FallbackAcquireResult,
  type FallbackLease,
  type PacedPair,
} from "./fallback-leases.js";

export { FALLBACK_LEASE_PREFIX } from "./fallback-leases.js";
export type { FallbackAcquireRequest, FallbackAcquireResult, FallbackLease, PacedPair } from "./fallback-leases.js";

/** Options of a `FallbackPool`. Durations in ms; defaults are the broker's (SPEC §1–§3). */
export interface FallbackPoolOptions {
  /** This worker's id, as it presents it to the broker. */
  readonly workerId: string;
  /** Default `DEFAULT_SCORING`; use the broker's numbers when they differ. */
  readonly scoring?: ScoringConfig;
  /** Epoch ms. Default `Date.now`. */
  readonly clock?: () => number;
  /** Uniform in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
  /** Used until a snapshot arrives (from the broker or the file). */
  readonly staticProxies?: readonly ProxySpecInput[];
  /** The rendezvous set for `staticProxies` (this worker is always added). */
  readonly staticWorkers?: readonly string[];
  /**
   * Shard `staticProxies` as worker `index` of `count` instead of by worker ids (workers started
   * with an index, e.g. a StatefulSet's ordinal). Snapshots still shard over their live workers.
   */
  readonly shard?: { readonly index: number; readonly count: number };
  /** The pool `staticProxies` belong to. Default "default". */
  readonly staticPool?: string;
  /** Where `useSnapshot` writes the snapshot and `loadFromFile` reads it. */
  readonly snapshotFile?: string;
  /** Outcomes kept for replay; beyond it the oldest are dropped. Default 10 000. */
  readonly maxBufferedOutcomes?: number;
  /** Sticky session binding TTL. Default 600 000. */
  readonly sessionTtlMs?: number;
  /** Lease TTL when neither the request nor a policy sets one. Default 30 000. */
  readonly defaultTtlMs?: number;
  /** Ban length after BLOCKED when no policy sets one. Default 3 600 000. */
  readonly banTtlMs?: number;
  /**
   * The domain-key rule of snapshots that list workers' domain-keys (domain-shares.ts): a listing
   * of this worker is used after `knownAfterMs` (the membership refresh period + 1 s) and not
   * within `expiryMarginMs` of its end. Default 6 000 and 2 000.
   */
  readonly domainRule?: { readonly knownAfterMs: number; readonly expiryMarginMs: number };
  /** Called after every build of the share (`share` and `hasPool` may have changed). */
  readonly onShareBuilt?: () => void;
  /**
   * Called with how many buffered outcomes were just dropped: the buffer was full when an outcome
   * was added, or when outcomes a replay could not deliver were put back (`requeueOutcomes`).
   */
  readonly onOutcomesDropped?: (count: number) => void;
}

/**
 * The SDK's local fallback pool (SPEC §7): this worker's rendezvous share of the last pool
 * snapshot (or of a static list), served by an in-process `MemoryStore`, so exclusivity, pacing,
 * bans, sessions and quarantine follow the broker's rules (docs/store-semantics.md). Acquires
 * carry the host's isolation group, so the local stores never put one proxy on two domain-keys of
 * a group at once (G8), and routes are decided by share key (shareKeyOf, sdk/src/model/isolation.ts). Outcomes of
 * fallback leases are buffered (bounded) for replay to the broker.
 *
 * One `MemoryStore` lives as long as the pool. A new snapshot changes its proxies in place
 * (removes what left the share, adds what joined, updates the rest), so leases already granted
 * keep their exclusivity, renew and release normally, and local pacing, bans and quarantine
 * survive the rebuild. The store has no way to set a score, so proxies enter with the initial
 * score rather than their snapshot score. Serves one pool: the snapshot's (or `staticPool`).
 *
 * Composed of three parts, each a file: `PoolMembership` (membership and snapshot: the share and
 * its stores, the domain-key listings and the claim), `FallbackLeases` (acquire, renew, release,
 * the hold after entering fallback) and `FallbackOutcomes` (the outcomes kept for replay).
 */
export class FallbackPool {
  private readonly membership: PoolMembership;
  private readonly outcomes: FallbackOutcomes;
  private readonly leases: FallbackLeases;

  constructor(opts: FallbackPoolOptions) {
    if (opts.workerId === "") throw new InvalidInputError("fallback pool needs a worker id");
    const clock = opts.clock ?? Date.now;
    this.membership = new PoolMembership({
      ...opts,
      clock,
      onBuilt: () => {
        this.leases.wake();
        opts.onShareBuilt?.();
      },
    });
    this.outcomes = new FallbackOutcomes(opts.maxBufferedOutcomes ?? DEFAULT_MAX_BUFFERED_OUTCOMES, opts.onOutcomesDropped);
    const defaults = {
      maxConcurrency: 1,
      minIntervalMs: 0,
      defaultTtlMs: opts.defaultTtlMs ?? BROKER_DEFAULTS.leaseTtlMs,
      banTtlMs: opts.banTtlMs ?? BROKER_DEFAULTS.banTtlMs,
      maxIntervalMs: (opts.scoring ?? DEFAULT_SCORING).adaptive.maxMs,
    };
    const leaseOpts = {
      workerId: opts.workerId,
      clock,
      defaults,
      ...(opts.sessionTtlMs !== undefined ? { sessionTtlMs: opts.sessionTtlMs } : {}),
    };
    this.leases = new FallbackLeases(leaseOpts, this.membership, this.outcomes);
    this.membership.useStatic();
  }

  /**
   * This worker entered fallback mode at `at` (epoch ms): the last broker lease of a pair of its
   * share may have ended just now at another worker, so no pair of a domain-key is granted before
   * `at` + that domain-key's interval (the policy's, or the broker's adaptive one), and never
   * before `at` + 250 ms; for a domain-key of an isolation group, not before `at` + the group's
   * affinity window either (that lease may have been for another key of the group, G8).
   */
  enter(at: number): void {
    this.leases.enter(at);
  }

  /**
   * Other workers' broker leases on this worker's claim have surely ended by `at` (epoch ms): the
   * per-domain-key hold of `enter` counts from then when that is later (a silent broker: the
   * broker reserves the claim, then the others stop, docs/spec.md §7).
   */
  othersStopBy(at: number): void {
    this.leases.othersStopBy(at);
  }

  /**
   * Since entering fallback, grant nothing before `ms` have passed (longer than the per-domain-key
   * hold when other workers' broker leases may run on: the caller knows why it fell back).
   */
  holdAtLeast(ms: number): void {
    this.leases.holdAtLeast(ms);
  }

  /**
   * Back in broker mode: nothing more is granted here until the next `enter` — waiting acquires
   * end at once with a `closed` denial, and a grant that completes after this is given back.
   */
  leave(): void {
    this.leases.leave();
  }

  /**
   * Keep proxy `proxyId` busy for `host` locally while a broker lease of this worker still holds
   * it (entering fallback with the lease's request in flight): a local lease of that proxy,
   * released when the broker lease ends so that local pacing counts from there. Undefined when
   * the proxy is not in this worker's share or not free here.
   */
  adopt(req: FallbackAcquireRequest, proxyId: string): Promise<FallbackLease | undefined> {
    return this.leases.adopt(req, proxyId);
  }

  /**
   * The claim this pool would serve now (docs/spec.md §7), from the lists in use: the live workers,
   * and — when this worker is known to the others (`known`) — every domain-key it is established
   * for, whole or from its share. Undefined when the broker lists no domain-keys (nothing is
   * claimed: the pool serves its share of every domain-key, as before claims).
   */
  claimCandidate(known: boolean): { readonly members: readonly string[]; readonly keys: readonly ClaimedKey[] } | undefined {
    return this.membership.claimCandidate(known);
  }

  /** The claim the broker acknowledged, if any. */
  get acknowledged(): FallbackClaim | undefined {
    return this.membership.acknowledged;
  }

  /**
   * Serve `claim` from now on: the broker acknowledged it, so it reserves what it names while this
   * worker is silent. The share is cut over its members; with `snapshotFile` set, the file keeps
   * it (a worker restarted during an outage may use it: the broker has it).
   */
  useClaim(acknowledged: FallbackClaim): Promise<void> {
    return this.membership.useClaim(acknowledged);
  }

  /**
   * A light refresh: the live workers (the share is rebuilt over them when they changed), the
   * broker's adaptive pacing and its longest lease TTL (taken as they are).
   */
  async useMembership(m: MembershipUpdate): Promise<void> {
    return this.membership.useMembership(m);
  }

  /**
   * Build the pool from `snap`: this worker's share (rendezvous over its live workers and this
   * worker) of its ACTIVE proxies, with its policies. Then, with `snapshotFile` set, write the
   * file; a write failure rejects with `SnapshotFileError`, the new pool being in use already.
   */
  useSnapshot(fresh: PoolSnapshot): Promise<void> {
    return this.membership.useSnapshot(fresh);
  }

  /**
   * Build the pool from `snapshotFile`. True when the file held a snapshot newer than the one in
   * use (or none was in use); a missing or corrupt file gives false.
   */
  loadFromFile(): Promise<boolean> {
    return this.membership.loadFromFile();
  }

  /**
   * Lease a proxy of this worker's share for the host's domain-key. With `maxWaitMs` > 0 it
   * retries when a local lease is released, at the store's retry-after, or every 50 ms, until
   * the wait is over. A pool other than the one served is denied with -1. Throws
   * `InvalidInputError` for a bad host or negative durations.
   */
  acquire(req: FallbackAcquireRequest): Promise<FallbackAcquireResult> {
    return this.leases.acquire(req);
  }

  /** Extend a fallback lease (store-semantics §renew); other ids are lost NOT_FOUND. */
  renew(leaseId: string, fencingToken: number, ttlMs: number): Promise<RenewResult> {
    return this.leases.renew(leaseId, fencingToken, ttlMs);
  }

  /**
   * Release a fallback lease with its outcome (store-semantics §release). An outcome the store
   * applied (released, or lost EXPIRED with the right token) is buffered once for replay.
   */
  release(leaseId: string, fencingToken: number, outcome: OutcomeInput): Promise<ReleaseResult> {
    return this.leases.release(leaseId, fencingToken, outcome);
  }

  /**
   * Whether a local lease of (proxyId, domainKey), or of a proxy of the same exit IP (G9), is live
   * at `now`, or ended less than its pacing interval ago: a broker grant of that pair now could
   * reach the site too early.
   */
  usedLately(proxyId: string, domainKey: string, now: number): boolean {
    return this.leases.usedLately(proxyId, domainKey, now);
  }

  /**
   * No local lease is live at `now` or ended less than its pacing interval (or its isolation
   * group's affinity window) ago: the broker may hand this worker's share to others at once
   * without any pair reaching a site too early, nor a proxy another key of the group too early.
   */
  quiet(now: number): boolean {
    return this.leases.quiet(now);
  }

  /**
   * The pairs used locally whose pacing still runs at `now` (their last local lease ended less
   * than an interval ago, or, for a key of an isolation group, less than its affinity window ago):
   * going back to the broker, which does not know of these uses, the client makes the broker pace
   * them from now (docs/spec.md §7) — and hold the proxy for that key in its group. Live local
   * leases are not listed (they are handed over).
   */
  pacedPairs(now: number): PacedPair[] {
    return this.leases.pacedPairs(now);
  }

  /** Take the buffered outcomes, oldest first, for replay to the broker. */
  drainOutcomes(): BufferedOutcome[] {
    return this.outcomes.drain();
  }

  /** Put back outcomes a replay could not deliver (as drained, oldest first). */
  requeueOutcomes(entries: readonly BufferedOutcome[]): void {
    this.outcomes.requeue(entries);
  }

  /** Outcomes waiting for replay. */
  get bufferedOutcomes(): number {
    return this.outcomes.size;
  }

  /** Outcomes dropped because the buffer was full (cumulative). */
  get droppedOutcomes(): number {
    return this.outcomes.dropped;
  }

  /** Proxy ids of this worker's share, as of the last completed build (sorted, frozen). */
  get share(): readonly string[] {
    return this.membership.share;
  }

  /**
   * True when an outage would not stop this worker: the share holds a proxy, and — when the
   * broker lists workers' domain-keys — this worker is established for some domain-key (served
   * from every proxy when it is the only one listed for it).
   */
  get hasPool(): boolean {
    return this.membership.hasPool;
  }

  /**
   * Where an acquire for `domainKey` is served from now: every proxy ("sole": no other worker is
   * listed for it), this worker's share, or nowhere ("none": not listed long enough for it).
   */
  routeOf(domainKey: string): DomainRoute {
    return this.membership.routeOf(domainKey);
  }

  /**
   * The domain-keys this worker may lease for from this pool now, sorted (every one, "*", while
   * the broker lists no domain-keys or the pool is a static list).
   */
  get readyDomains(): readonly string[] {
    return this.membership.readyDomains;
  }

  /** The broker answered just now (see `DomainShares.contact`). */
  contact(): void {
    this.membership.contact();
  }

  /** The broker lists domain-keys, and has not listed this worker with `domainKey` yet. */
  awaitsListing(domainKey: string): boolean {
    return this.membership.awaitsListing(domainKey);
  }

  /** When a listing of this worker can next become usable (epoch ms; undefined: none pending). */
  nextDomainReadyAt(): number | undefined {
    return this.membership.nextDomainReadyAt();
  }

  /** The snapshot in use (from the broker or the file), if any. */
  get snapshot(): PoolSnapshot | undefined {
    return this.membership.snapshot;
  }
}
