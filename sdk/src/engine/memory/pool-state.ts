/**
 * Internal to the in-memory engine: all state of one pool, and the moves that must keep its
 * indexes consistent (activate, deactivate, rescore).
 */
import type { DomainPolicySpec, ProxyStateName } from "../../model/model.js";
import { TimeHeap } from "./min-heap.js";
import type { PairState, ProxyRecord } from "./records.js";
import { ScoreIndex } from "./score-index.js";
import { Sessions } from "./sessions.js";

/** State of one domain-key in a pool: its pairs and its busy index. */
export interface DomainState {
  /** Proxy id → pair. */
  readonly pairs: Map<string, PairState>;
  /** Proxy id → the moment the blocked pair becomes eligible again. */
  readonly busy: TimeHeap;
}

const EMPTY_INDEX = new ScoreIndex<ProxyRecord>();

/** Everything the engine keeps for one pool. */
export class PoolState {
  readonly proxies = new Map<string, ProxyRecord>();
  /** ACTIVE proxies, all tiers. */
  readonly all = new ScoreIndex<ProxyRecord>();
  /** ACTIVE proxies per non-empty tier. */
  readonly tiers = new Map<string, ScoreIndex<ProxyRecord>>();
  /** QUARANTINED proxy id → until. */
  readonly quarantine = new TimeHeap();
  readonly domains = new Map<string, DomainState>();
  readonly sessions = new Sessions();
  /** Worker id → last acquire. */
  readonly workers = new Map<string, number>();
  readonly policies = new Map<string, DomainPolicySpec>();
  private policyChanges = 0;
  private sortedIds: string[] | undefined;

  constructor(readonly name: string) {}

  /** The policy version acquires must present; "0" until a policy is first set. */
  get policyVersion(): string {
    return String(this.policyChanges);
  }

  /** Record a change of the policies. */
  bumpPolicyVersion(): void {
    this.policyChanges += 1;
  }

  /** The candidate list of an acquire: the tier's index, or all ACTIVE proxies for "". */
  candidates(tier: string): ScoreIndex<ProxyRecord> {
    if (tier === "") return this.all;
    return this.tiers.get(tier) ?? EMPTY_INDEX;
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
      state = { pairs: new Map(), busy: new TimeHeap() };
      this.domains.set(domainKey, state);
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
    this.all.insert(rec);
    this.tierIndex(rec.tier)?.insert(rec);
  }

  /** Take a proxy out of the indexes into `state`; QUARANTINED gets a return time `until`. */
  deactivate(rec: ProxyRecord, state: Exclude<ProxyStateName, "ACTIVE">, until: number): void {
    if (rec.state === "ACTIVE") {
      this.all.remove(rec);
      this.tiers.get(rec.tier)?.remove(rec);
    }
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
    const tier = this.tiers.get(rec.tier);
    this.all.remove(rec);
    tier?.remove(rec);
    rec.score = score;
    this.all.insert(rec);
    tier?.insert(rec);
  }
}
