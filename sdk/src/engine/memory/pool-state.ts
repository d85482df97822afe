/**
 * Internal to the in-memory engine: all state of one pool, and the moves that must keep its
 * indexes consistent (activate, deactivate, rescore).
 */
import { DomainUses, LongestTtl } from "./lately.js";
import type { DomainPolicySpec, ProxyStateName, RetiredPolicySet } from "../../model/model.js";
import type { AdaptiveState } from "../../model/scoring.js";
import { TimeHeap } from "./min-heap.js";
import type { PairState, ProxyRecord } from "./records.js";
import { ScoreIndex } from "./score-index.js";
import { RequestLog } from "./request-log.js";
import { Sessions } from "./sessions.js";
import { SeenWorkers } from "./seen-workers.js";
import { WorkerClaims } from "./worker-claims.js";
import { SweepQueue } from "./sweep-queue.js";
import { MAX_WORKERS_PER_POOL } from "../../model/model.js";
import type { NewPoolEvent, PoolEvent } from "../../model/model.js";
import { EventLog } from "./event-log.js";
import { IsolationHolds } from "./isolation.js";
import { ExitBook } from "./exits.js";

/** Events a pool keeps (as the Redis store's capped stream). */
export const EVENTS_MAX = 10_000;

/** State of one domain-key in a pool: its pairs and its busy index. */
export interface DomainState {
  readonly key: string;
  /** Proxy id → pair. */
  readonly pairs: Map<string, PairState>;
  /** Proxy id → the moment the blocked pair becomes eligible again. */
  readonly busy: TimeHeap;
  /** Adaptive pacing of the domain-key (§2). */
  adaptive: AdaptiveState;
  /** The pairs' proxy ids in a rotating sweep, for pruning stale pairs (`pairOf` queues them). */
  readonly pairSweep: SweepQueue<string>;
}

/** A domain-key whose interval was never raised. */
export const NOT_ADAPTED: AdaptiveState = { adaptiveMs: 0, learnedMs: 0, learnedAt: 0, loweredAt: 0 };

/** The index key of one label. */
function labelKey(key: string, value: string): string {
  return `${key}\u0000${value}`;
}

const EMPTY_INDEX = new ScoreIndex<ProxyRecord>();

/** Everything the engine keeps for one pool. */
export class PoolState {
  readonly proxies = new Map<string, ProxyRecord>();
  /** ACTIVE proxies, all tiers. */
  readonly all = new ScoreIndex<ProxyRecord>();
  /** ACTIVE proxies per non-empty tier. */
  readonly tiers = new Map<string, ScoreIndex<ProxyRecord>>();
  /** ACTIVE proxies per label (key and value). */
  readonly labels = new Map<string, ScoreIndex<ProxyRecord>>();
  /** QUARANTINED proxy id → until. */
  readonly quarantine = new TimeHeap();
  readonly domains = new Map<string, DomainState>();
  readonly sessions = new Sessions();
  /** Proxy id → the silent worker that may be using it from its fallback pool (only it is granted it). */
  readonly reserved = new Map<string, string>();
  /** Domain-keys every proxy of which is reserved for a silent worker → that worker. */
  readonly reservedDomains = new Map<string, string>();
  /** Silent worker → the domain-keys its reserved proxies are reserved for (absent: all). */
  readonly reservedScopes = new Map<string, ReadonlySet<string>>();
  /** Silent worker → when its reservations hold for every caller (absent: at once; `Reservations.from`). */
  readonly reservedFrom = new Map<string, number>();
  /** Isolation groups (G8): per (group, proxy), until when each domain-key holds the proxy. */
  readonly isolation = new IsolationHolds();
  /** Exit IPs (G9): what health checks showed of each proxy's exit, the members of each exit, shared hosts. */
  readonly exits = new ExitBook();
  /** The longest lease TTL granted or renewed lately (what a hold after a loss waits for). */
  readonly longestTtl = new LongestTtl();
  /** Which worker used which domain-key lately (fallback shares follow them). */
  readonly domainUses = new DomainUses();
  /** (worker id, request id) → the lease granted to it, for a minute (idempotent retries). */
  readonly requests = new RequestLog();
  /** Worker id → last seen (bounded). */
  readonly workers = new SeenWorkers(MAX_WORKERS_PER_POOL);
  /** Workers that keep a fallback pool (they said so in an acquire or a snapshot request) → when they last did. */
  readonly fallbackPools = new SeenWorkers(MAX_WORKERS_PER_POOL);
  /** Workers that yield their leases when the broker is unreachable (they said so in an acquire) → when they last did. */
  readonly yielding = new SeenWorkers(MAX_WORKERS_PER_POOL);
  /** Worker → the time of the latest list of live workers it said it holds. */
  readonly lists = new SeenWorkers(MAX_WORKERS_PER_POOL);
  /** Worker → the broker time of the latest pong it said it received (its pings). */
  readonly heard = new SeenWorkers(MAX_WORKERS_PER_POOL);
  /** Worker → its last two fallback claims, the latest first. */
  readonly claims = new WorkerClaims(MAX_WORKERS_PER_POOL);
  /** Domain-keys in a rotating sweep, for pruning the ones that remember nothing. */
  readonly domainSweep = new SweepQueue<string>();
  /** The highest health-checker leader term that recorded a result here. */
  healthTerm = 0;
  /** The pool's event stream (capped). */
  readonly events = new EventLog<PoolEvent>(EVENTS_MAX);

  /** Append an event at `now`. */
  emit(now: number, event: NewPoolEvent): void {
    this.events.append(now, (id) => ({ id, at: now, ...event }));
  }
  readonly policies = new Map<string, DomainPolicySpec>();
  /** Replaced policy sets, newest first. */
  history: RetiredPolicySet[] = [];
  private policyChanges = 0;
  /** The pool's epoch ("" until `ensureEpoch`) and the moment grants resume after a loss. */
  epoch = "";
  grantsFrom = 0;
  private sortedIds: string[] | undefined;

  constructor(readonly name: string) {}

  /** The policy version acquires must present: `<epoch>.<changes>` (".0" for a new pool). */
  get policyVersion(): string {
    return `${this.epoch}.${this.policyChanges}`;
  }

  /** Record a change of the policies. */
  bumpPolicyVersion(): void {
    this.policyChanges += 1;
  }

  /**
   * The candidate list of an acquire: the smallest of the indexes of its tier and of each wanted
   * label (a proxy must be in all of them), or all ACTIVE proxies when it asks for neither.
   */
  candidates(tier: string, labels: Readonly<Record<string, string>>): ScoreIndex<ProxyRecord> {
    let best = tier === "" ? this.all : (this.tiers.get(tier) ?? EMPTY_INDEX);
    for (const key in labels) {
      const index = this.labels.get(labelKey(key, labels[key]!)) ?? EMPTY_INDEX;
      if (index.size < best.size || best === this.all) best = index;
    }
    return best;
  }

  /** Every index an ACTIVE `rec` belongs to: all, its tier's, its labels'. Created on demand. */
  private indexesOf(rec: ProxyRecord): ScoreIndex<ProxyRecord>[] {
    const out = [this.all];
    const tier = this.tierIndex(rec.tier);
    if (tier !== undefined) out.push(tier);
    for (const key in rec.labels) {
      const k = labelKey(key, rec.labels[key]!);
      let index = this.labels.get(k);
      if (index === undefined) {
        index = new ScoreIndex<ProxyRecord>();
        this.labels.set(k, index);
      }
      out.push(index);
    }
    return out;
  }

  /** Put an ACTIVE record into its indexes. */
  index(rec: ProxyRecord): void {
    for (const index of this.indexesOf(rec)) index.insert(rec);
  }

  /** Take a record out of its indexes (by its current score, tier and labels). */
  unindex(rec: ProxyRecord): void {
    for (const index of this.indexesOf(rec)) index.remove(rec);
  }

  /** Put many new ACTIVE records into their indexes at once. */
  indexMany(recs: readonly ProxyRecord[]): void {
    const groups = new Map<ScoreIndex<ProxyRecord>, ProxyRecord[]>();
    for (const rec of recs) {
      for (const index of this.indexesOf(rec)) {
        const group = groups.get(index);
        if (group === undefined) groups.set(index, [rec]);
        else group.push(rec);
      }
    }
    for (const [index, group] of groups) index.insertMany(group);
  }

  /** Take many records out of their indexes at once. */
  unindexMany(recs: readonly ProxyRecord[]): void {
    const groups = new Map<ScoreIndex<ProxyRecord>, ProxyRecord[]>();
    for (const rec of recs) {
      for (const index of this.indexesOf(rec)) {
        const group = groups.get(index);
        if (group === undefined) groups.set(index, [rec]);
        else group.push(rec);
      }
    }
    for (const [index, group] of groups) index.removeMany(group);
  }

  /**
   * The index of `tier`, created on demand; undefined for the empty tier, whose proxies are
   * only ever chosen through the whole index.
   */
  tierIndex(tier: string): ScoreIndex<ProxyRecord> | undefined {
    if (tier === "") return undefined;
    let index = this.tiers.get(tier);
    if (index === undefined) {
      index = new ScoreIndex<ProxyRecord>();
      this.tiers.set(tier, index);
    }
    return index;
  }

  /** The domain-key's state, created on demand. */
  domain(domainKey: string): DomainState {
    let state = this.domains.get(domainKey);
    if (state === undefined) {
      state = { key: domainKey, pairs: new Map(), busy: new TimeHeap(), adaptive: NOT_ADAPTED, pairSweep: new SweepQueue() };
      this.domains.set(domainKey, state);
      this.domainSweep.push(domainKey);
    }
    return state;
  }

  /** Ids in byte order, cached until the set of proxies changes. */
  idsInOrder(compare: (a: string, b: string) => number): readonly string[] {
    this.sortedIds ??= [...this.proxies.keys()].sort(compare);
    return this.sortedIds;
  }

  /** Forget the cached id order (after an add or remove). */
  idsChanged(): void {
    this.sortedIds = undefined;
  }

  /** Make a proxy ACTIVE with `score` and put it in the indexes (no-op on the index if ACTIVE). */
  activate(rec: ProxyRecord, score: number): void {
    if (rec.state === "ACTIVE") {
      this.rescore(rec, score);
      return;
    }
    this.quarantine.delete(rec.id);
    rec.quarantineUntil = 0;
    rec.state = "ACTIVE";
    rec.score = score;
    this.index(rec);
  }

  /** Take a proxy out of the indexes into `state`; QUARANTINED gets a return time `until`. */
  deactivate(rec: ProxyRecord, state: Exclude<ProxyStateName, "ACTIVE">, until: number): void {
    if (rec.state === "ACTIVE") this.unindex(rec);
    rec.state = state;
    if (state === "QUARANTINED") {
      rec.quarantineUntil = until;
      this.quarantine.set(rec.id, until);
    } else {
      rec.quarantineUntil = 0;
      this.quarantine.delete(rec.id);
    }
  }

  /** Change a proxy's score, moving it in the indexes when it is ACTIVE. */
  rescore(rec: ProxyRecord, score: number): void {
    if (rec.score === score) return;
    if (rec.state !== "ACTIVE") {
      rec.score = score;
      return;
    }
    this.unindex(rec);
    rec.score = score;
    this.index(rec);
  }
}
