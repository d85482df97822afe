import { hostFromDomain, InvalidInputError } from "../model/domain-key.js";
import type {
  AcquireParams,
  DomainPolicySpec,
  LeaseView,
  OutcomeInput,
  PolicySet,
  ProxySpecInput,
  ProxyView,
  ReleaseResult,
  RenewResult,
} from "../model/model.js";
import { hostIsolation } from "../model/isolation.js";
import { effectivePolicy, policyParams, type PolicyDefaults } from "../model/policy.js";
import { DEFAULT_SCORING, type ScoringConfig } from "../model/scoring.js";
import { MemoryStore } from "../engine/memory-store.js";
import { BROKER_DEFAULTS } from "../model/broker-defaults.js";
import { DEFAULT_POOL } from "../model/model.js";
import { DEFAULT_MAX_BUFFERED_OUTCOMES, OutcomeBuffer, type BufferedOutcome } from "./outcome-buffer.js";
import { shareOf } from "../model/rendezvous.js";
import { loadSnapshotFile, saveSnapshotFile, type PoolSnapshot } from "./snapshot.js";
import { DomainShares, type DomainListing, type DomainRoute } from "./domain-shares.js";
import { EMPTY_CLAIM, claimRoute, type ClaimedKey, type FallbackClaim } from "../model/fallback-claim.js";

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

/** An acquire in fallback mode; the host is the target's host (a port is ignored). */
export interface FallbackAcquireRequest {
  /** "" = "default". */
  readonly pool: string;
  readonly host: string;
  /** 0 = the policy's default TTL. */
  readonly ttlMs: number;
  /** "" = no sticky session. */
  readonly sessionKey: string;
  /** "" = any tier. */
  readonly tier: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Wait locally up to this long for a proxy; 0 = answer at once. */
  readonly maxWaitMs: number;
  /**
   * Wait up to this long (at least `maxWaitMs`) for the hold that follows entering fallback mode
   * (see `enter`): the caller's deadline, so that a switch is not an error. Default 0.
   */
  readonly holdWaitMs?: number;
}

/** A lease granted by the fallback pool: its id starts with `fb-`. */
export interface FallbackLease extends LeaseView {
  readonly source: "fallback";
}

/** Result of `FallbackPool.acquire`; `retryAfterMs` -1 = unknown. */
export type FallbackAcquireResult =
  | { readonly kind: "granted"; readonly lease: FallbackLease }
  | {
      readonly kind: "denied";
      readonly retryAfterMs: number;
      /** In the hold after entering fallback (see `enter`). */
      readonly held?: boolean;
      /** The worker left fallback mode (see `leave`): ask the broker. */
      readonly closed?: boolean;
      /**
       * The broker has not listed this worker with the domain-key long enough (domain-shares.ts):
       * no pair of it may be used here, whatever the wait.
       */
      readonly unlisted?: boolean;
    };

/** Prefix of fallback lease ids; broker lease ids are bare hex. */
export const FALLBACK_LEASE_PREFIX = "fb-";
/**
 * The shortest hold of a domain-key's pairs after entering fallback: long enough for a lease of
 * the pair that another worker just gave up (its signal aborted) to stop at the site.
 */
const SWITCH_HOLD_MS = 250;
/** How long a worker stays in the sharding set after the last list that named it (the broker's live window). */
const REMEMBER_WORKERS_MS = 60_000;
/** The domain-key rule's defaults: a membership period (5 s) + 1 s, and a call timeout + 1 s. */
const KNOWN_AFTER_MS = 6_000;
const EXPIRY_MARGIN_MS = 2_000;
/** Local retry interval of a waiting acquire when nothing wakes it earlier. */
const POLL_MS = 50;
/** Local lease records are swept after this many grants. */
const SWEEP_EVERY = 1024;
/** A local lease record outlives its expiry by max(ttl, this), like the store's tombstones. */
const KEEP_MS = 600_000;

/** What the pool is built from: a snapshot or the static list. */
interface Source {
  readonly pool: string;
  readonly specs: readonly ProxySpecInput[];
  readonly workers: readonly string[];
  /** The id this worker has among `workers` (its worker id, or its static shard's). */
  readonly self: string;
  readonly policies: readonly DomainPolicySpec[];
  readonly pacing: Readonly<Record<string, number>>;
}

/** What this pool remembers of a lease it granted (keyed by the store's lease id). */
interface LocalLease {
  /** The local store that granted it. */
  readonly store: MemoryStore;
  readonly pool: string;
  readonly proxyId: string;
  /** The host it was granted for (an acquire of that host reaches the same domain-key). */
  readonly host: string;
  readonly domainKey: string;
  readonly token: number;
  readonly ttlMs: number;
  /** The pacing interval it was granted under. */
  readonly intervalMs: number;
  /**
   * How long after it ended the pair's use still counts: the interval, or the isolation group's
   * affinity window when longer (G8: no other key of the group gets the proxy before then).
   */
  readonly afterMs: number;
  expireAt: number;
  /** When it was released (0: not yet). */
  endedAt: number;
  keepUntil: number;
  outcomeBuffered: boolean;
}

/**
 * A (proxy, domain-key) pair whose pacing interval — or its isolation group's affinity window —
 * counted from its last local use, still runs.
 */
export interface PacedPair {
  readonly proxyId: string;
  readonly host: string;
  readonly domainKey: string;
  /** When its last local lease ended (released, or expired). */
  readonly endedAt: number;
  readonly intervalMs: number;
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
 */
export class FallbackPool {
  /** Serves the domain-keys other workers use too: this worker's rendezvous share of the proxies. */
  private readonly store: MemoryStore;
  /** Serves the domain-keys only this worker uses: every ACTIVE proxy (filled on first use). */
  private readonly sole: MemoryStore;
  /** The source whose proxies `sole` holds (undefined: none yet). */
  private soleSource: Source | undefined;
  private readonly domains: DomainShares;
  private readonly clock: () => number;
  private readonly buffer: OutcomeBuffer;
  private readonly defaults: PolicyDefaults;
  private readonly leases = new Map<string, LocalLease>();
  private readonly wakers = new Set<() => void>();
  private ready: Promise<void> = Promise.resolve();
  private writing: Promise<void> = Promise.resolve();
  private source: Source | undefined;
  private current: PoolSnapshot | undefined;
  private shareIds: readonly string[] = [];
  private grants = 0;
  /** Epoch ms this worker entered fallback mode (0: not in it; see `enter`). */
  private since = 0;
  /** Beyond the per-domain-key hold, nothing at all is granted before since + this (see `holdAtLeast`). */
  private holdMs = 0;
  /** Worker id → when a snapshot or membership last listed it (see `remembered`). */
  private readonly listedAt = new Map<string, number>();
  /** False after `leave` until the next `enter`: nothing is granted (the broker serves again). */
  private serving = true;
  /**
   * The claim the broker acknowledged (docs/spec.md §7): while the broker lists domain-keys, what
   * this pool serves — its routes, and the members its share is cut over. Undefined: none yet.
   */
  private claim: FallbackClaim | undefined;

  constructor(private readonly opts: FallbackPoolOptions) {
    if (opts.workerId === "") throw new InvalidInputError("fallback pool needs a worker id");
    this.clock = opts.clock ?? Date.now;
    const engine = { scoring: opts.scoring ?? DEFAULT_SCORING, clock: this.clock, random: opts.random ?? Math.random };
    this.store = new MemoryStore(engine);
    this.sole = new MemoryStore(engine);
    this.domains = new DomainShares({
      self: opts.workerId,
      knownAfterMs: opts.domainRule?.knownAfterMs ?? KNOWN_AFTER_MS,
      expiryMarginMs: opts.domainRule?.expiryMarginMs ?? EXPIRY_MARGIN_MS,
      rememberMs: REMEMBER_WORKERS_MS,
    });
    this.buffer = new OutcomeBuffer(opts.maxBufferedOutcomes ?? DEFAULT_MAX_BUFFERED_OUTCOMES);
    this.defaults = {
      maxConcurrency: 1,
      minIntervalMs: 0,
      defaultTtlMs: opts.defaultTtlMs ?? BROKER_DEFAULTS.leaseTtlMs,
      banTtlMs: opts.banTtlMs ?? BROKER_DEFAULTS.banTtlMs,
      maxIntervalMs: (opts.scoring ?? DEFAULT_SCORING).adaptive.maxMs,
    };
    if (opts.staticProxies !== undefined) {
      const pool = poolName(opts.staticPool ?? "");
      const shard = opts.shard;
      const source: Source =
        shard !== undefined
          ? {
              pool,
              specs: opts.staticProxies,
              workers: Array.from({ length: shard.count }, (_, i) => shardId(i)),
              self: shardId(shard.index),
              policies: [],
              pacing: {},
            }
          : { pool, specs: opts.staticProxies, workers: opts.staticWorkers ?? [], self: opts.workerId, policies: [], pacing: {} };
      // Cannot fail: the store is open. Every call waits for this build first.
      this.install(source).catch(() => undefined);
    }
  }

  /**
   * This worker entered fallback mode at `at` (epoch ms): the last broker lease of a pair of its
   * share may have ended just now at another worker, so no pair of a domain-key is granted before
   * `at` + that domain-key's interval (the policy's, or the broker's adaptive one), and never
   * before `at` + 250 ms; for a domain-key of an isolation group, not before `at` + the group's
   * affinity window either (that lease may have been for another key of the group, G8).
   */
  enter(at: number): void {
    this.since = at;
    this.holdMs = 0;
    this.serving = true;
  }

  /**
   * Other workers' broker leases on this worker's claim have surely ended by `at` (epoch ms): the
   * per-domain-key hold of `enter` counts from then when that is later (a silent broker: the
   * broker reserves the claim, then the others stop, docs/spec.md §7).
   */
  othersStopBy(at: number): void {
    if (this.since > 0 && at > this.since) this.since = at;
  }

  /**
   * Since entering fallback, grant nothing before `ms` have passed (longer than the per-domain-key
   * hold when other workers' broker leases may run on: the caller knows why it fell back).
   */
  holdAtLeast(ms: number): void {
    this.holdMs = Math.max(this.holdMs, ms);
  }

  /**
   * Back in broker mode: nothing more is granted here until the next `enter` — waiting acquires
   * end at once with a `closed` denial, and a grant that completes after this is given back.
   */
  leave(): void {
    this.since = 0;
    this.holdMs = 0;
    this.serving = false;
    this.wake();
  }

  /**
   * Keep proxy `proxyId` busy for `host` locally while a broker lease of this worker still holds
   * it (entering fallback with the lease's request in flight): a local lease of that proxy,
   * released when the broker lease ends so that local pacing counts from there. Undefined when
   * the proxy is not in this worker's share or not free here.
   */
  async adopt(req: FallbackAcquireRequest, proxyId: string): Promise<FallbackLease | undefined> {
    const host = hostFromDomain(req.host);
    const r = await this.attempt({ ...req, maxWaitMs: 0 }, host, proxyId);
    return r.kind === "granted" ? r.lease : undefined;
  }

  /**
   * The claim this pool would serve now (docs/spec.md §7), from the lists in use: the live workers,
   * and — when this worker is known to the others (`known`) — every domain-key it is established
   * for, whole or from its share. Undefined when the broker lists no domain-keys (nothing is
   * claimed: the pool serves its share of every domain-key, as before claims).
   */
  claimCandidate(known: boolean): { readonly members: readonly string[]; readonly keys: readonly ClaimedKey[] } | undefined {
    const snap = this.current;
    if (snap === undefined || !this.domains.enforced) return undefined;
    return { members: snap.liveWorkers, keys: known ? this.domains.claimKeys(this.clock()) : [] };
  }

  /** The claim the broker acknowledged, if any. */
  get acknowledged(): FallbackClaim | undefined {
    return this.claim;
  }

  /**
   * Serve `claim` from now on: the broker acknowledged it, so it reserves what it names while this
   * worker is silent. The share is cut over its members; with `snapshotFile` set, the file keeps
   * it (a worker restarted during an outage may use it: the broker has it).
   */
  async useClaim(acknowledged: FallbackClaim): Promise<void> {
    const claim = frozenClaim(acknowledged);
    this.claim = claim;
    const snap = this.current;
    if (snap === undefined) return;
    const withClaim: PoolSnapshot = { ...snap, claim };
    this.current = withClaim;
    await this.install(this.sourceOf(withClaim));
    await this.save(withClaim);
  }

  /**
   * A light refresh: the live workers (the share is rebuilt over them when they changed), the
   * broker's adaptive pacing and its longest lease TTL (taken as they are).
   */
  async useMembership(m: {
    workers: readonly string[];
    pacing?: Readonly<Record<string, number>>;
    longestTtlMs?: number;
    fallbackWindowMs?: number;
    workersWithoutFallback?: number;
    /** Worker → the domain-keys the broker listed for it (absent: the broker lists none). */
    domains?: Readonly<Record<string, readonly DomainListing[]>>;
    workerAbsentAfterMs?: number;
    reserveIntervalMs?: number;
  }): Promise<void> {
    if (m.domains !== undefined) this.domains.update(new Map(Object.entries(m.domains)), this.clock());
    const current = this.current;
    if (current === undefined) return;
    const pacing = m.pacing ?? current.pacing ?? {};
    let next: PoolSnapshot = {
      ...current,
      pacing,
      ...(m.longestTtlMs !== undefined ? { longestTtlMs: m.longestTtlMs } : {}),
      ...(m.fallbackWindowMs !== undefined ? { fallbackWindowMs: m.fallbackWindowMs } : {}),
      ...(m.workersWithoutFallback !== undefined ? { workersWithoutFallback: m.workersWithoutFallback } : {}),
      ...(m.domains !== undefined ? { domains: m.domains } : {}),
      ...(m.workerAbsentAfterMs !== undefined ? { workerAbsentAfterMs: m.workerAbsentAfterMs } : {}),
      ...(m.reserveIntervalMs !== undefined ? { reserveIntervalMs: m.reserveIntervalMs } : {}),
    };
    const workers = this.remembered(m.workers);
    const same = workers.length === current.liveWorkers.length && workers.every((w, i) => w === current.liveWorkers[i]);
    // with claims, the share follows the acknowledged claim's members, not each list
    if (!same && !this.domains.enforced) {
      await this.useSnapshot({ ...next, liveWorkers: workers });
      return;
    }
    if (!same) next = { ...next, liveWorkers: workers };
    this.current = next;
    if (this.source !== undefined && this.source.pool === poolName(current.pool)) this.source = { ...this.source, pacing };
  }

  /**
   * Build the pool from `snap`: this worker's share (rendezvous over its live workers and this
   * worker) of its ACTIVE proxies, with its policies. Then, with `snapshotFile` set, write the
   * file; a write failure rejects with `SnapshotFileError`, the new pool being in use already.
   */
  async useSnapshot(fresh: PoolSnapshot): Promise<void> {
    if (fresh.domains !== undefined) this.domains.update(new Map(Object.entries(fresh.domains)), this.clock());
    const snap: PoolSnapshot = {
      ...fresh,
      liveWorkers: this.remembered(fresh.liveWorkers),
      ...(this.claim === undefined ? {} : { claim: this.claim }),
    };
    this.current = snap;
    await this.install(this.sourceOf(snap));
    await this.save(snap);
  }

  /** With `snapshotFile` set, write `snap` there (after the writes before it). */
  private async save(snap: PoolSnapshot): Promise<void> {
    const file = this.opts.snapshotFile;
    if (file === undefined) return;
    const write = this.writing.then(() => saveSnapshotFile(file, snap));
    this.writing = write.catch(() => undefined);
    await write;
  }

  /**
   * Build the pool from `snapshotFile`. True when the file held a snapshot newer than the one in
   * use (or none was in use); a missing or corrupt file gives false.
   */
  async loadFromFile(): Promise<boolean> {
    if (this.opts.snapshotFile === undefined) return false;
    const snap = await loadSnapshotFile(this.opts.snapshotFile);
    if (snap === undefined || (this.current !== undefined && this.current.takenAt >= snap.takenAt)) return false;
    // the listings count for as long as the broker had listed them, their ends as of the file's time
    if (snap.domains !== undefined) {
      const age = Math.max(0, this.clock() - snap.takenAt);
      const aged = Object.entries(snap.domains).map(([w, ls]): [string, DomainListing[]] => [
        w,
        ls.map((l) => ({ ...l, expiresInMs: l.expiresInMs - age })),
      ]);
      this.domains.update(new Map(aged), this.clock(), true);
    }
    this.current = snap;
    // the claim the broker had acknowledged when the file was written, when it was this worker's:
    // the broker reserves it (its keys end by themselves)
    if (snap.claim !== undefined && snap.liveWorkers.includes(this.opts.workerId)) this.claim = frozenClaim(snap.claim);
    await this.install(this.sourceOf(snap));
    return true;
  }

  /**
   * Lease a proxy of this worker's share for the host's domain-key. With `maxWaitMs` > 0 it
   * retries when a local lease is released, at the store's retry-after, or every 50 ms, until
   * the wait is over. A pool other than the one served is denied with -1. Throws
   * `InvalidInputError` for a bad host or negative durations.
   */
  async acquire(req: FallbackAcquireRequest): Promise<FallbackAcquireResult> {
    const host = hostFromDomain(req.host);
    if (!(req.ttlMs >= 0) || !(req.maxWaitMs >= 0)) throw new InvalidInputError("ttl and max wait must be ≥ 0");
    const start = this.clock();
    const deadline = start + req.maxWaitMs;
    const holdDeadline = start + Math.max(req.maxWaitMs, req.holdWaitMs ?? 0);
    for (;;) {
      const r = await this.attempt(req, host);
      const left = (r.kind === "denied" && r.held === true ? holdDeadline : deadline) - this.clock();
      if (r.kind === "granted" || r.closed === true || r.unlisted === true || left <= 0) return r;
      await this.sleep(Math.max(1, Math.min(left, POLL_MS, r.retryAfterMs >= 0 ? r.retryAfterMs : POLL_MS)));
    }
  }

  /** Extend a fallback lease (store-semantics §renew); other ids are lost NOT_FOUND. */
  async renew(leaseId: string, fencingToken: number, ttlMs: number): Promise<RenewResult> {
    const id = innerId(leaseId);
    if (id === undefined) return { kind: "lost", reason: "NOT_FOUND" };
    const local = this.leases.get(id);
    const r = await (local?.store ?? this.store).renew({ leaseId: id, fencingToken, ttlMs });
    if (r.kind === "renewed" && local !== undefined && local.token === fencingToken) {
      local.expireAt = r.expireAt;
      local.keepUntil = r.expireAt + Math.max(local.ttlMs, ttlMs, KEEP_MS, local.afterMs);
    }
    return r;
  }

  /**
   * Release a fallback lease with its outcome (store-semantics §release). An outcome the store
   * applied (released, or lost EXPIRED with the right token) is buffered once for replay.
   */
  async release(leaseId: string, fencingToken: number, outcome: OutcomeInput): Promise<ReleaseResult> {
    const id = innerId(leaseId);
    if (id === undefined) return { kind: "lost", reason: "NOT_FOUND" };
    const local = this.leases.get(id);
    const r = await (local?.store ?? this.store).release({ leaseId: id, fencingToken, outcome });
    const applied = r.kind === "released" || r.reason === "EXPIRED";
    if (local !== undefined && local.token === fencingToken && local.endedAt === 0) local.endedAt = Math.min(this.clock(), local.expireAt);
    const dropped = this.buffer.dropped;
    // ABANDONED changes nothing at the broker: not worth a replay
    if (local !== undefined && applied && local.token === fencingToken && !local.outcomeBuffered && outcome.kind !== "ABANDONED") {
      local.outcomeBuffered = true;
      const { pool, proxyId, domainKey } = local;
      this.buffer.push({ pool, proxyId, domainKey, outcome, observedAt: this.clock(), workerId: this.opts.workerId });
    }
    this.wake();
    this.reportDropped(dropped);
    return r;
  }

  /**
   * Whether a local lease of (proxyId, domainKey) is live at `now`, or ended less than its pacing
   * interval ago: a broker grant of that pair now could reach the site too early.
   */
  usedLately(proxyId: string, domainKey: string, now: number): boolean {
    for (const l of this.leases.values()) {
      if (l.proxyId !== proxyId || l.domainKey !== domainKey) continue;
      const end = l.endedAt > 0 ? l.endedAt : l.expireAt;
      if (end + l.intervalMs > now) return true;
    }
    return false;
  }

  /**
   * No local lease is live at `now` or ended less than its pacing interval (or its isolation
   * group's affinity window) ago: the broker may hand this worker's share to others at once
   * without any pair reaching a site too early, nor a proxy another key of the group too early.
   */
  quiet(now: number): boolean {
    for (const l of this.leases.values()) {
      const end = l.endedAt > 0 ? l.endedAt : l.expireAt;
      if (end + l.afterMs > now) return false;
    }
    return true;
  }

  /**
   * The pairs used locally whose pacing still runs at `now` (their last local lease ended less
   * than an interval ago, or, for a key of an isolation group, less than its affinity window ago):
   * going back to the broker, which does not know of these uses, the client makes the broker pace
   * them from now (docs/spec.md §7) — and hold the proxy for that key in its group. Live local
   * leases are not listed (they are handed over).
   */
  pacedPairs(now: number): PacedPair[] {
    const last = new Map<string, PacedPair>();
    const live = new Set<string>();
    for (const l of this.leases.values()) {
      const key = `${l.proxyId}\n${l.domainKey}`;
      const end = l.endedAt > 0 ? l.endedAt : l.expireAt;
      if (end > now) live.add(key);
      else if (end + l.afterMs > now && (last.get(key)?.endedAt ?? -1) < end) {
        last.set(key, { proxyId: l.proxyId, host: l.host, domainKey: l.domainKey, endedAt: end, intervalMs: l.intervalMs });
      }
    }
    return [...last].filter(([key]) => !live.has(key)).map(([, p]) => p);
  }

  /** Take the buffered outcomes, oldest first, for replay to the broker. */
  drainOutcomes(): BufferedOutcome[] {
    return this.buffer.drain();
  }

  /** Put back outcomes a replay could not deliver (as drained, oldest first). */
  requeueOutcomes(entries: readonly BufferedOutcome[]): void {
    const dropped = this.buffer.dropped;
    this.buffer.requeue(entries);
    this.reportDropped(dropped);
  }

  /** Outcomes waiting for replay. */
  get bufferedOutcomes(): number {
    return this.buffer.size;
  }

  /** Outcomes dropped because the buffer was full (cumulative). */
  get droppedOutcomes(): number {
    return this.buffer.dropped;
  }

  /** Proxy ids of this worker's share, as of the last completed build (sorted, frozen). */
  get share(): readonly string[] {
    return this.shareIds;
  }

  /**
   * True when an outage would not stop this worker: the share holds a proxy, and — when the
   * broker lists workers' domain-keys — this worker is established for some domain-key (served
   * from every proxy when it is the only one listed for it).
   */
  get hasPool(): boolean {
    const now = this.clock();
    if (!this.domains.enforced) return this.shareIds.length > 0;
    const active = this.source?.specs.length ?? 0;
    return (this.claim?.keys ?? []).some((k) => k.untilMs > now && (k.whole ? active > 0 : this.shareIds.length > 0));
  }

  /**
   * Where an acquire for `domainKey` is served from now: every proxy ("sole": no other worker is
   * listed for it), this worker's share, or nowhere ("none": not listed long enough for it).
   */
  routeOf(domainKey: string): DomainRoute {
    const now = this.clock();
    return this.domains.enforced ? claimRoute(this.claim ?? EMPTY_CLAIM, domainKey, now) : this.domains.route(domainKey, now);
  }

  /**
   * The domain-keys this worker may lease for from this pool now, sorted (every one, "*", while
   * the broker lists no domain-keys or the pool is a static list).
   */
  get readyDomains(): readonly string[] {
    if (!this.domains.enforced) return ["*"];
    const now = this.clock();
    return (this.claim?.keys ?? []).filter((k) => k.untilMs > now).map((k) => k.domainKey);
  }

  /** The broker answered just now (see `DomainShares.contact`). */
  contact(): void {
    this.domains.contact(this.clock());
  }

  /** The broker lists domain-keys, and has not listed this worker with `domainKey` yet. */
  awaitsListing(domainKey: string): boolean {
    return this.domains.awaitsListing(domainKey);
  }

  /** When a listing of this worker can next become usable (epoch ms; undefined: none pending). */
  nextDomainReadyAt(): number | undefined {
    return this.domains.nextEstablishedAt(this.clock());
  }

  /** The snapshot in use (from the broker or the file), if any. */
  get snapshot(): PoolSnapshot | undefined {
    return this.current;
  }

  /**
   * What `snap` builds: the share is cut over the acknowledged claim's members while the broker
   * lists domain-keys (the broker reserves that share), else over the snapshot's live workers.
   */
  private sourceOf(snap: PoolSnapshot): Source {
    if (!this.domains.enforced) return sourceOf(snap, this.opts.workerId, snap.liveWorkers);
    // no claim acknowledged yet: nothing to serve
    if (this.claim === undefined) return { ...sourceOf(snap, this.opts.workerId, []), specs: [] };
    return sourceOf(snap, this.opts.workerId, this.claim.members);
  }

  /** Queue a rebuild behind earlier ones; resolves when it is done. */
  private install(source: Source): Promise<void> {
    const run = this.ready.then(() => this.rebuild(source));
    this.ready = run.catch(() => undefined);
    return run;
  }

  /** Removals first: an acquire between the two steps sees a subset of both shares. */
  private async rebuild(next: Source): Promise<void> {
    const ids = new Set(
      shareOf(
        next.specs.map((s) => s.id),
        next.workers,
        next.self,
      ),
    );
    const specs = next.specs.filter((s) => ids.has(s.id));
    const prev = this.source;
    if (prev !== undefined) {
      const gone = prev.pool !== next.pool ? this.shareIds : this.shareIds.filter((id) => !ids.has(id));
      await this.store.removeProxies(prev.pool, gone);
    }
    await this.store.addProxies(next.pool, specs);
    this.source = next;
    this.domains.usePolicies(next.policies);
    this.shareIds = Object.freeze(specs.map((s) => s.id).sort());
    this.wake();
    this.opts.onShareBuilt?.();
  }

  /** Tell `onOutcomesDropped` how many outcomes were dropped since the count was `before`. */
  private reportDropped(before: number): void {
    const n = this.buffer.dropped - before;
    if (n > 0) this.opts.onOutcomesDropped?.(n);
  }

  /**
   * The live workers to shard over: those just listed, and those listed within the last minute.
   * A list can miss workers that are still there (right after Redis lost its data, the broker
   * knows only who came back since); sharding over a worker that is gone costs a little of the
   * share, while missing one that is there could put two workers on one proxy.
   */
  private remembered(listed: readonly string[]): string[] {
    const now = this.clock();
    for (const w of listed) this.listedAt.set(w, now);
    for (const [w, at] of this.listedAt) if (at < now - REMEMBER_WORKERS_MS) this.listedAt.delete(w);
    return [...this.listedAt.keys()].sort();
  }

  /** One store attempt with the policies of the source in use. */
  private async attempt(req: FallbackAcquireRequest, host: string, proxyId = ""): Promise<FallbackAcquireResult> {
    await this.ready;
    const source = this.source;
    const pool = poolName(req.pool);
    if (!this.serving && proxyId === "") return { kind: "denied", retryAfterMs: -1, closed: true };
    if (source === undefined || source.pool !== pool) return { kind: "denied", retryAfterMs: -1 };
    const eff = effectivePolicy(source.policies, host, this.defaults);
    // the broker's adaptive interval of the domain-key, when it had raised it
    const minIntervalMs = Math.max(eff.minIntervalMs, source.pacing[eff.domainKey] ?? 0);
    // G8 among this worker's own leases: the local store keeps keys of one isolation group apart
    const isolation = hostIsolation(policySetOf(source), host, eff.domainKey);
    const affinityMs = isolation.params?.affinityMs ?? 0;
    // what the acknowledged claim names: "sole" only when no other worker was listed with a key
    // of the same share key (domain-shares.ts)
    const route = this.routeOf(eff.domainKey);
    if (route === "none") return { kind: "denied", retryAfterMs: -1, unlisted: true };
    const store = route === "sole" ? await this.soleFor(source) : this.store;
    const hold = Math.max(SWITCH_HOLD_MS, minIntervalMs, affinityMs, this.holdMs);
    const held = proxyId === "" && this.since > 0 ? this.since + hold - this.clock() : 0;
    if (held > 0) return { kind: "denied", retryAfterMs: held, held: true };
    const params: AcquireParams = {
      ...policyParams(eff),
      minIntervalMs,
      pool,
      workerId: this.opts.workerId,
      ttlMs: req.ttlMs > 0 ? req.ttlMs : eff.defaultTtlMs,
      shadowKeys: [], // no history: no earlier keys, none joined a group since
      ...(isolation.params === undefined ? {} : { isolation: isolation.params }),
      requestId: "",
      proxyId,
      policyVersion: ".0", // policies are resolved here; the store never holds any
      sessionKey: req.sessionKey,
      sessionTtlMs: this.opts.sessionTtlMs ?? BROKER_DEFAULTS.sessionTtlMs,
      tier: req.tier,
      labels: req.labels,
    };
    const r = await store.acquire(params);
    if (r.kind === "stale-policy") return { kind: "denied", retryAfterMs: -1 };
    if (r.kind === "denied") return r;
    if (!this.serving && proxyId === "") {
      await store.release({
        leaseId: r.lease.leaseId,
        fencingToken: r.lease.fencingToken,
        outcome: { kind: "ABANDONED", httpStatus: 0, latencyMs: 0, retryAfterMs: 0 },
      });
      return { kind: "denied", retryAfterMs: -1, closed: true };
    }
    const afterMs = Math.max(minIntervalMs, affinityMs);
    return { kind: "granted", lease: this.remember(r.lease, { store, ttlMs: params.ttlMs, host, intervalMs: minIntervalMs, afterMs }) };
  }

  /**
   * The store of the domain-keys this worker alone uses, holding every ACTIVE proxy of `source`
   * (brought up to date when the source changed). Removals first, as in `rebuild`.
   */
  private async soleFor(source: Source): Promise<MemoryStore> {
    const prev = this.soleSource;
    if (prev === source) return this.sole;
    this.soleSource = source;
    const ids = new Set(source.specs.map((s) => s.id));
    if (prev !== undefined) {
      const gone = prev.pool !== source.pool ? prev.specs.map((s) => s.id) : prev.specs.filter((s) => !ids.has(s.id)).map((s) => s.id);
      await this.sole.removeProxies(prev.pool, gone);
    }
    await this.sole.addProxies(source.pool, source.specs);
    return this.sole;
  }

  /** Record a grant for renew/release bookkeeping and give it its fallback id. */
  private remember(
    lease: LeaseView,
    o: { store: MemoryStore; ttlMs: number; host: string; intervalMs: number; afterMs: number },
  ): FallbackLease {
    const { ttlMs } = o;
    const now = this.clock();
    if (++this.grants % SWEEP_EVERY === 0) {
      for (const [id, l] of this.leases) if (l.keepUntil < now) this.leases.delete(id);
    }
    this.leases.set(lease.leaseId, {
      store: o.store,
      pool: lease.pool,
      proxyId: lease.proxy.id,
      host: o.host,
      domainKey: lease.domainKey,
      token: lease.fencingToken,
      ttlMs,
      intervalMs: o.intervalMs,
      afterMs: o.afterMs,
      expireAt: lease.expireAt,
      endedAt: 0,
      keepUntil: lease.expireAt + Math.max(ttlMs, KEEP_MS, o.afterMs),
      outcomeBuffered: false,
    });
    return { ...lease, leaseId: FALLBACK_LEASE_PREFIX + lease.leaseId, source: "fallback" };
  }

  /**
   * Sleep `ms`, or less when a release or rebuild wakes waiters. Not unref'd: a caller awaits the
   * acquire, which must settle by its deadline.
   */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
    });
  }

  private wake(): void {
    for (const w of [...this.wakers]) w();
  }
}

/** The broker's pool name for "" (SPEC §4). */
function poolName(pool: string): string {
  return pool === "" ? DEFAULT_POOL : pool;
}

/** The store's lease id inside a fallback lease id. */
function innerId(leaseId: string): string | undefined {
  return leaseId.startsWith(FALLBACK_LEASE_PREFIX) ? leaseId.slice(FALLBACK_LEASE_PREFIX.length) : undefined;
}

function specOf(p: ProxyView): ProxySpecInput {
  return { id: p.id, url: p.url, tier: p.tier, labels: p.labels };
}

/**
 * The policies of `source` as the local stores' acquires resolve them: no history (a snapshot
 * carries none), so a host's isolation group is the one its policy names now.
 */
function policySetOf(source: Source): PolicySet {
  return { version: ".0", epoch: "", policies: source.policies, history: [], proxies: source.specs.length };
}

function sourceOf(snap: PoolSnapshot, self: string, workers: readonly string[]): Source {
  const specs = snap.proxies.filter((p) => p.state === "ACTIVE").map(specOf);
  return { pool: poolName(snap.pool), specs, workers, self, policies: snap.policies, pacing: snap.pacing ?? {} };
}

/** A claim nothing reachable from it can change (the pool's view hands it out). */
function frozenClaim(c: FallbackClaim): FallbackClaim {
  return Object.freeze({ ...c, members: Object.freeze([...c.members]), keys: Object.freeze(c.keys.map((k) => Object.freeze({ ...k }))) });
}

/** The rendezvous id of static shard `i`. */
function shardId(i: number): string {
  return `shard-${i}`;
}
