/**
 * Internal to the in-memory engine: isolation groups (G8, sdk/src/model/isolation.ts). Per
 * (group, proxy), until when each domain-key holds the proxy in the group (its "hold"): a
 * lease's expiry, or its end, plus the group's affinity window. Grants, renewals and releases of
 * grouped keys write holds; acquires that present `isolation` read them. Ended holds are dropped
 * when their record is written, when the group's acquires count what it holds, and by a rotating
 * sweep, a few records per acquire.
 */
import type { IsolationParams } from "../../model/model.js";
import { TimeHeap } from "./min-heap.js";
import { SweepQueue } from "./sweep-queue.js";

/** The isolation of a pair's last grant: renew and release carry no policy. */
export interface PairIsolation {
  /** "" = none: renew and release write nothing. */
  readonly group: string;
  readonly affinityMs: number;
}

/** A pair whose last grant named no group. */
export const NO_ISOLATION: PairIsolation = Object.freeze({ group: "", affinityMs: 0 });

/** The isolation a grant with these parameters leaves on its pair. */
export function pairIsolationOf(isolation: IsolationParams | undefined): PairIsolation {
  if (isolation === undefined || isolation.group === "") return NO_ISOLATION;
  return { group: isolation.group, affinityMs: isolation.affinityMs };
}

/** Where one hold is: the group, the proxy, and the domain-key holding it. */
export interface HoldAt {
  readonly group: string;
  readonly proxyId: string;
  readonly domainKey: string;
}

/** The holds of one (group, proxy): domain-key → until. */
interface HoldRecord {
  readonly group: string;
  readonly proxyId: string;
  readonly holds: Map<string, number>;
}

/** The holds of one group. */
interface GroupHolds {
  /** Proxy id → its holds. */
  readonly records: Map<string, HoldRecord>;
  /** Proxy id → its latest hold (sizes the band of the group's acquires). */
  readonly latest: TimeHeap;
}

/** A change of one hold at `now`. */
interface HoldChange {
  readonly until: number;
  readonly now: number;
  /** Never lower the hold (a grant, a renewal); else set it as given (a release). */
  readonly raise: boolean;
}

/** Every hold of a pool. */
export class IsolationHolds {
  private readonly groups = new Map<string, GroupHolds>();
  private readonly queue = new SweepQueue<HoldRecord>();

  /** Whether `group` records any hold (ended ones not yet dropped included). */
  has(group: string): boolean {
    return this.groups.has(group);
  }

  /** How many proxies a domain-key (any) holds in `group` at `now`; drops the records that ended. */
  heldCount(group: string, now: number): number {
    const g = this.groups.get(group);
    if (g === undefined) return 0;
    for (let ended = g.latest.popUpTo(now); ended !== undefined; ended = g.latest.popUpTo(now)) g.records.delete(ended.key);
    if (g.records.size === 0) this.groups.delete(group);
    return g.latest.size;
  }

  /** Raise the hold at `at` to `until` (never lowers it). */
  raise(at: HoldAt, until: number, now: number): void {
    this.change(at, { until, now, raise: true });
  }

  /** Set the hold at `at` to `until`, lowering it; dropped when `until` ≤ `now`. */
  lower(at: HoldAt, until: number, now: number): void {
    this.change(at, { until, now, raise: false });
  }

  /** Until when a domain-key other than `domainKey` holds `proxyId` in one of `groups` (0: none at `now`). */
  heldByOthers(groups: readonly string[], proxyId: string, domainKey: string, now: number): number {
    let until = 0;
    for (const group of groups) {
      const rec = this.groups.get(group)?.records.get(proxyId);
      if (rec === undefined) continue;
      for (const [key, end] of rec.holds) if (key !== domainKey && end > now && end > until) until = end;
    }
    return until;
  }

  /** Look at up to `count` records; drop their ended holds, and the records left empty. */
  sweep(now: number, count: number): void {
    this.queue.sweep(count, (rec) => {
      if (this.groups.get(rec.group)?.records.get(rec.proxyId) !== rec) return false;
      for (const [key, end] of rec.holds) if (end <= now) rec.holds.delete(key);
      if (rec.holds.size > 0) return true;
      this.drop(rec);
      return false;
    });
  }

  /** Write one hold; the record's ended holds go, and the record with them when none is left. */
  private change(at: HoldAt, change: HoldChange): void {
    const { until, now, raise } = change;
    const existing = this.groups.get(at.group)?.records.get(at.proxyId);
    if (existing === undefined && until <= now) return;
    const rec = existing ?? this.recordOf(at);
    const mine = raise ? Math.max(rec.holds.get(at.domainKey) ?? 0, until) : until;
    rec.holds.set(at.domainKey, mine);
    let latest = 0;
    for (const [key, end] of rec.holds) {
      if (end <= now) rec.holds.delete(key);
      else if (end > latest) latest = end;
    }
    if (rec.holds.size === 0) this.drop(rec);
    else this.groups.get(at.group)?.latest.set(at.proxyId, latest);
  }

  /** The record of (group, proxy), created (and queued for the sweep). */
  private recordOf(at: HoldAt): HoldRecord {
    let g = this.groups.get(at.group);
    if (g === undefined) {
      g = { records: new Map(), latest: new TimeHeap() };
      this.groups.set(at.group, g);
    }
    const rec: HoldRecord = { group: at.group, proxyId: at.proxyId, holds: new Map() };
    g.records.set(at.proxyId, rec);
    this.queue.push(rec);
    return rec;
  }

  /** Forget an empty record (the sweep drops it from its queue when it comes round). */
  private drop(rec: HoldRecord): void {
    const g = this.groups.get(rec.group);
    if (g?.records.get(rec.proxyId) !== rec) return;
    g.records.delete(rec.proxyId);
    g.latest.delete(rec.proxyId);
    if (g.records.size === 0) this.groups.delete(rec.group);
  }
}

/** The groups whose holds an acquire checks: its group (when it has one) and its former groups. */
export function checkedGroups(isolation: IsolationParams): readonly string[] {
  return isolation.group === "" ? isolation.formerGroups : [isolation.group, ...isolation.formerGroups];
}
