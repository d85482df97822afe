import type { DomainPolicySpec, PolicySet, ProxySpecInput, ProxyView } from "../model/model.js";
import { DEFAULT_SCORING, type ScoringConfig } from "../model/scoring.js";
import { MemoryStore } from "../engine/memory-store.js";
import { DEFAULT_POOL } from "../model/model.js";
import { groupKeys, shareOfGroups, type ExitMember } from "../model/exit-groups.js";
import { loadSnapshotFile, saveSnapshotFile, type PoolSnapshot } from "./snapshot.js";
import { DomainShares, type DomainListing, type DomainRoute } from "./domain-shares.js";
import { EMPTY_CLAIM, claimRoute, type ClaimedKey, type FallbackClaim } from "../model/fallback-claim.js";

/** How long a worker stays in the sharding set after the last list that named it (the broker's live window). */
const REMEMBER_WORKERS_MS = 60_000;
/** The domain-key rule's defaults: a membership period (5 s) + 1 s, and a call timeout + 1 s. */
const KNOWN_AFTER_MS = 6_000;
const EXPIRY_MARGIN_MS = 2_000;

/** Options of a `PoolMembership` (see `FallbackPoolOptions` for each). */
export interface PoolMembershipOptions {
  readonly workerId: string;
  readonly scoring?: ScoringConfig;
  readonly clock: () => number;
  readonly random?: () => number;
  readonly staticProxies?: readonly ProxySpecInput[];
  readonly staticWorkers?: readonly string[];
  readonly shard?: { readonly index: number; readonly count: number };
  readonly staticPool?: string;
  readonly snapshotFile?: string;
  readonly domainRule?: { readonly knownAfterMs: number; readonly expiryMarginMs: number };
  /** Called after every build of the share (`share` and `hasPool` may have changed). */
  readonly onBuilt: () => void;
}

/** What the pool is built from: a snapshot or the static list. */
export interface Source {
  readonly pool: string;
  readonly specs: readonly ProxySpecInput[];
  /** The exit of each proxy of `specs`, as far as known (G9: a share takes whole exit groups). */
  readonly exits: readonly ExitMember[];
  readonly workers: readonly string[];
  /** The id this worker has among `workers` (its worker id, or its static shard's). */
  readonly self: string;
  readonly policies: readonly DomainPolicySpec[];
  readonly pacing: Readonly<Record<string, number>>;
}

/** A light refresh of a pool's membership (`FallbackPool.useMembership`): the live workers, and what the snapshot carries beside them. */
export type MembershipUpdate = { readonly workers: readonly string[] } & Pick<
  PoolSnapshot,
  "pacing" | "longestTtlMs" | "fallbackWindowMs" | "workersWithoutFallback" | "domains" | "workerAbsentAfterMs" | "reserveIntervalMs"
>;

/**
 * Membership and snapshot of a fallback pool (SPEC §7): the snapshot in use (from the broker or
 * the file) and the live workers it is sharded over, the domain-key listings and the claim the
 * broker acknowledged, and the two local stores built from them — `store`, this worker's
 * rendezvous share, and the sole store of the domain-keys only this worker uses.
 *
 * A new snapshot changes the stores' proxies in place (removals first, then additions), so leases
 * already granted keep their exclusivity and local pacing, bans and quarantine survive.
 */
export class PoolMembership {
  /** Serves the domain-keys other workers use too: this worker's rendezvous share of the proxies. */
  readonly store: MemoryStore;
  /** Serves the domain-keys only this worker uses: every ACTIVE proxy (filled on first use). */
  private readonly sole: MemoryStore;
  /** The source whose proxies `sole` holds (undefined: none yet). */
  private soleSource: Source | undefined;
  private readonly domains: DomainShares;
  private readonly clock: () => number;
  private building: Promise<void> = Promise.resolve();
  private writing: Promise<void> = Promise.resolve();
  private built: Source | undefined;
  private current: PoolSnapshot | undefined;
  private shareIds: readonly string[] = [];
  /** Proxy id → the key of its exit group (G9), as of the last completed build. */
  private groups: ReadonlyMap<string, string> = new Map();
  /** Worker id → when a snapshot or membership last listed it (see `remembered`). */
  private readonly listedAt = new Map<string, number>();
  /**
   * The claim the broker acknowledged (docs/spec.md §7): while the broker lists domain-keys, what
   * this pool serves — its routes, and the members its share is cut over. Undefined: none yet.
   */
  private claim: FallbackClaim | undefined;

  constructor(private readonly opts: PoolMembershipOptions) {
    this.clock = opts.clock;
    const engine = { scoring: opts.scoring ?? DEFAULT_SCORING, clock: this.clock, random: opts.random ?? Math.random };
    this.store = new MemoryStore(engine);
    this.sole = new MemoryStore(engine);
    this.domains = new DomainShares({
      self: opts.workerId,
      knownAfterMs: opts.domainRule?.knownAfterMs ?? KNOWN_AFTER_MS,
      expiryMarginMs: opts.domainRule?.expiryMarginMs ?? EXPIRY_MARGIN_MS,
      rememberMs: REMEMBER_WORKERS_MS,
    });
  }

  /** Build from `staticProxies`, when set (used until a snapshot arrives). */
  useStatic(): void {
    const opts = this.opts;
    if (opts.staticProxies === undefined) return;
    const pool = poolName(opts.staticPool ?? "");
    const shard = opts.shard;
    const exits = opts.staticProxies.map((s) => ({ id: s.id, exitIp: "" }));
    const source: Source =
      shard !== undefined
        ? {
            pool,
            specs: opts.staticProxies,
            exits,
            workers: Array.from({ length: shard.count }, (_, i) => shardId(i)),
            self: shardId(shard.index),
            policies: [],
            pacing: {},
          }
        : { pool, specs: opts.staticProxies, exits, workers: opts.staticWorkers ?? [], self: opts.workerId, policies: [], pacing: {} };
    // Cannot fail: the store is open. Every call waits for this build first.
    this.install(source).catch(() => undefined);
  }

  /** Settles when the builds queued so far are done. */
  get ready(): Promise<void> {
    return this.building;
  }

  /** The source of the last completed build (undefined: none yet). */
  get source(): Source | undefined {
    return this.built;
  }

  /** See `FallbackPool.claimCandidate`. */
  claimCandidate(known: boolean): { readonly members: readonly string[]; readonly keys: readonly ClaimedKey[] } | undefined {
    const snap = this.current;
    if (snap === undefined || !this.domains.enforced) return undefined;
    return { members: snap.liveWorkers, keys: known ? this.domains.claimKeys(this.clock()) : [] };
  }

  /** The claim the broker acknowledged, if any. */
  get acknowledged(): FallbackClaim | undefined {
    return this.claim;
  }

  /** See `FallbackPool.useClaim`. */
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

  /** See `FallbackPool.useMembership`. */
  async useMembership(m: MembershipUpdate): Promise<void> {
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
    if (this.built !== undefined && this.built.pool === poolName(current.pool)) this.built = { ...this.built, pacing };
  }

  /** See `FallbackPool.useSnapshot`. */
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

  /** See `FallbackPool.loadFromFile`. */
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

  /** Proxy ids of this worker's share, as of the last completed build (sorted, frozen). */
  get share(): readonly string[] {
    return this.shareIds;
  }

  /** Whether two proxies leave from one exit IP, as the last completed build knows (G9); a proxy is on its own exit. */
  sameExit(a: string, b: string): boolean {
    if (a === b) return true;
    const group = this.groups.get(a);
    return group !== undefined && group === this.groups.get(b);
  }

  /** See `FallbackPool.hasPool`. */
  get hasPool(): boolean {
    const now = this.clock();
    if (!this.domains.enforced) return this.shareIds.length > 0;
    const active = this.built?.specs.length ?? 0;
    return (this.claim?.keys ?? []).some((k) => k.untilMs > now && (k.whole ? active > 0 : this.shareIds.length > 0));
  }

  /** See `FallbackPool.routeOf`. */
  routeOf(domainKey: string): DomainRoute {
    const now = this.clock();
    return this.domains.enforced ? claimRoute(this.claim ?? EMPTY_CLAIM, domainKey, now) : this.domains.route(domainKey, now);
  }

  /** See `FallbackPool.readyDomains`. */
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
   * The store of the domain-keys this worker alone uses, holding every ACTIVE proxy of `source`
   * (brought up to date when the source changed). Removals first, as in `rebuild`.
   */
  async soleFor(source: Source): Promise<MemoryStore> {
    const prev = this.soleSource;
    if (prev === source) return this.sole;
    this.soleSource = source;
    const ids = new Set(source.specs.map((s) => s.id));
    if (prev !== undefined) {
      const gone = prev.pool !== source.pool ? prev.specs.map((s) => s.id) : prev.specs.filter((s) => !ids.has(s.id)).map((s) => s.id);
      await this.sole.removeProxies(prev.pool, gone);
    }
    await this.sole.addProxies(source.pool, source.specs);
    await this.sole.useExits(source.pool, membersOf(source));
    return this.sole;
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
    const run = this.building.then(() => this.rebuild(source));
    this.building = run.catch(() => undefined);
    return run;
  }

  /** Removals first: an acquire between the two steps sees a subset of both shares. */
  private async rebuild(next: Source): Promise<void> {
    const members = membersOf(next);
    const ids = new Set(shareOfGroups(members, next.workers, next.self));
    const specs = next.specs.filter((s) => ids.has(s.id));
    const prev = this.built;
    if (prev !== undefined) {
      const gone = prev.pool !== next.pool ? this.shareIds : this.shareIds.filter((id) => !ids.has(id));
      await this.store.removeProxies(prev.pool, gone);
    }
    await this.store.addProxies(next.pool, specs);
    await this.store.useExits(
      next.pool,
      members.filter((m) => ids.has(m.id)),
    );
    this.built = next;
    this.groups = groupKeys(members);
    this.domains.usePolicies(next.policies);
    this.shareIds = Object.freeze(specs.map((s) => s.id).sort());
    this.opts.onBuilt();
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
}

/** The broker's pool name for "" (SPEC §4). */
export function poolName(pool: string): string {
  return pool === "" ? DEFAULT_POOL : pool;
}

/**
 * The policies of `source` as the local stores' acquires resolve them: no history (a snapshot
 * carries none), so a host's isolation group is the one its policy names now.
 */
export function policySetOf(source: Source): PolicySet {
  return { version: ".0", epoch: "", policies: source.policies, history: [], proxies: source.specs.length };
}

/** The proxies of `source` with their exits ("" where not known). */
function membersOf(source: Source): ExitMember[] {
  const exits = new Map(source.exits.map((m) => [m.id, m.exitIp]));
  return source.specs.map((s) => ({ id: s.id, exitIp: exits.get(s.id) ?? "" }));
}

function specOf(p: ProxyView): ProxySpecInput {
  return { id: p.id, url: p.url, tier: p.tier, labels: p.labels };
}

function sourceOf(snap: PoolSnapshot, self: string, workers: readonly string[]): Source {
  const active = snap.proxies.filter((p) => p.state === "ACTIVE");
  const exits = active.map((p) => ({ id: p.id, exitIp: p.exitIp }));
  return { pool: poolName(snap.pool), specs: active.map(specOf), exits, workers, self, policies: snap.policies, pacing: snap.pacing ?? {} };
}

/** A claim nothing reachable from it can change (the pool's view hands it out). */
function frozenClaim(c: FallbackClaim): FallbackClaim {
  return Object.freeze({ ...c, members: Object.freeze([...c.members]), keys: Object.freeze(c.keys.map((k) => Object.freeze({ ...k }))) });
}

/** The rendezvous id of static shard `i`. */
function shardId(i: number): string {
  return `shard-${i}`;
}
