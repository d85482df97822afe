/**
 * The roles of a lease store, each named by what it is for. `LeaseStore` (store.ts) is all of
 * them; a caller that needs one role takes that role only.
 */
import type {
  AcquireParams,
  AcquireResult,
  AuditEntry,
  DomainPacing,
  DomainPolicySpec,
  DomainUse,
  EpochRequest,
  EpochState,
  HealthResult,
  HoldState,
  NewAuditEntry,
  NewPoolEvent,
  OutcomeReport,
  PolicySet,
  PoolEvent,
  PoolStats,
  ProxyAction,
  ProxyActionResult,
  ProxySpecInput,
  ProxyView,
  ReleaseParams,
  ReleaseResult,
  RenewParams,
  RenewResult,
  Reservations,
  StoreServer,
  WorkerHeard,
  WorkerSeen,
  WorkerTouch,
} from "../model/model.js";
import type { SourceSpec, SourceStatus, SourceView } from "../model/source.js";

/** Leases: grant, extend and release them, and apply the outcomes seen with them. */
export interface StoreLeases {
  /** Try to grant one lease now (G1, G2, G4, G7, §3 sessions). */
  acquire(params: AcquireParams): Promise<AcquireResult>;
  /** Extend a held lease to now + ttl (G3). */
  renew(params: RenewParams): Promise<RenewResult>;
  /** Release with an outcome (§2) and, when `next` is set, acquire in the same step. */
  release(params: ReleaseParams): Promise<ReleaseResult>;
  /**
   * Apply outcomes observed without a lease of this store (§7: outcomes seen in fallback are
   * replayed); returns how many were applied (unknown proxies are skipped).
   */
  reportOutcomes(pool: string, reports: readonly OutcomeReport[]): Promise<number>;
}

/** Proxies and their health: the pool's proxies, an admin's actions on them, health checks, counts. */
export interface StoreProxies {
  /** Add proxies or replace url, tier and labels of existing ones (state and score are kept). */
  addProxies(pool: string, specs: readonly ProxySpecInput[]): Promise<{ added: string[]; updated: string[] }>;
  removeProxies(pool: string, ids: readonly string[]): Promise<{ removed: string[]; notFound: string[] }>;
  /** QUARANTINED or BLACKLISTED → ACTIVE with `scoreAfterQuarantine`, quarantine count reset. */
  restoreProxies(pool: string, ids: readonly string[]): Promise<{ restored: string[]; notFound: string[] }>;
  /** Proxies in id order, ids greater than `after`; `next` is the token for the next page. */
  listProxies(pool: string, page: { size: number; after: string }): Promise<{ proxies: ProxyView[]; next: string }>;
  /**
   * Apply one health check result (§2); a pass returns a QUARANTINED proxy early. `exitIp`: the
   * exit the check saw through the proxy ("" or absent: none), recorded as store-semantics §exit
   * IPs says (G9).
   */
  recordHealth(pool: string, id: string, result: HealthResult, term?: number, exitIp?: string): Promise<ProxyView | undefined>;
  /** An admin's action on proxies of `pool` (see `ProxyAction`). */
  proxyAction(pool: string, ids: readonly string[], action: ProxyAction): Promise<ProxyActionResult>;
  poolStats(pool: string, liveSinceMs: number): Promise<PoolStats>;
}

/** Workers and reservations: who is live, who keeps a fallback pool, and what is kept for them. */
export interface StoreWorkers {
  /**
   * Workers that acquired (or said they are there) at or after `sinceMs`; with `claims`, each
   * with its last two fallback claims.
   */
  liveWorkers(pool: string, sinceMs: number, opts?: { readonly claims?: boolean }): Promise<WorkerSeen[]>;
  /**
   * A worker's ping (it keeps a fallback pool): live now, in contact up to `heard.heardAt` (never
   * moved back), and with `heard.claim` its latest fallback claim — the claim it sent before is
   * kept as the one before, unless this one repeats its version (docs/spec.md §7).
   */
  hearWorker(pool: string, workerId: string, heard: WorkerHeard): Promise<void>;
  /**
   * Record `workerId` as live now (it holds leases, or fetched a snapshot), keeping a fallback
   * pool, and the time of the latest list it holds (`touch.listsAt`, never moved back).
   */
  touchWorker(pool: string, workerId: string, touch?: WorkerTouch): Promise<void>;
  /**
   * Record workers as seen at the times given (`lastSeenAt`, and `fallbackPoolAt` when > 0), never
   * moving a later record back: how a broker puts back what it knew of the pool's workers after
   * the store lost its state, so that every replica still sees who went silent (§7).
   */
  rememberWorkers(pool: string, workers: readonly WorkerSeen[]): Promise<void>;
  /**
   * `workerId` left for good (it said so): no longer live, so no share is reserved for it; seen
   * again, it is live again (its fallback record is kept). False when it was not known.
   */
  forgetWorker(pool: string, workerId: string): Promise<boolean>;
  /**
   * Replace the pool's reservations: proxies, and whole domain-keys, that a silent worker may be
   * using from its fallback pool. A reserved proxy is granted to that worker only, for any
   * domain-key; a reserved domain-key is granted to that worker only, whatever the proxy. Renewals
   * of other workers' leases on them are refused.
   */
  reserve(pool: string, reserved: Reservations): Promise<void>;
  /**
   * The domain-keys workers used, as recorded by acquires with `domainUseMs`: those last used at
   * or after `sinceMs`, oldest records dropped.
   */
  domainUses(pool: string, sinceMs: number): Promise<DomainUse[]>;
  /**
   * Record domain-key uses as given, never moving a later record back (after the store lost its
   * state, as `rememberWorkers`).
   */
  rememberDomainUses(pool: string, uses: readonly DomainUse[]): Promise<void>;
}

/** Policies and pacing: the pool's domain policies, and the intervals adaptive pacing learned. */
export interface StorePolicies {
  /**
   * Create or replace the policy with this pattern; bumps the pool's policy version. The set it
   * replaces is kept as history (`PolicySet.history`) for the store's policy history time.
   */
  setPolicy(pool: string, policy: DomainPolicySpec): Promise<void>;
  /** Delete by pattern; bumps the version (and keeps history) when something was deleted. */
  deletePolicy(pool: string, pattern: string): Promise<boolean>;
  listPolicies(pool: string): Promise<PolicySet>;
  /**
   * Adaptive pacing state of these domain-keys (not adapted: zeros), or, when `domainKeys` is
   * empty, of every adapted domain-key of the pool, highest interval first; at most `limit`.
   */
  domainPacing(pool: string, domainKeys: readonly string[], limit: number): Promise<DomainPacing[]>;
}

/** The leader: one holder of a named lease across broker replicas (the health checker's). */
export interface StoreLeader {
  /**
   * A leader lease named `name` (one holder across broker replicas): taken when free, renewed for
   * `ttlMs` by its holder. `term` increases with every new holder; a holder passes it to
   * `recordHealth`, which refuses results of an older term than one it has seen in the pool.
   */
  campaign(name: string, owner: string, ttlMs: number): Promise<Campaign>;
  /** Give the lease up now (a standby may take it at once). */
  resign(name: string, owner: string): Promise<void>;
}

/** Events and audit: the pool's event stream and the trail of admin calls. */
export interface StoreEvents {
  /** Append to the pool's event stream (capped: about the last 10,000 events). */
  appendEvent(pool: string, event: NewPoolEvent): Promise<void>;
  /**
   * The pool's events after the cursor `after` ("" = from the oldest kept, "$" = only new ones),
   * at most `count`; when there is none yet, waits up to `blockMs` for one (0: answers at once).
   * `cursor` is what to pass next time.
   */
  readEvents(
    pool: string,
    after: string,
    opts: { readonly count: number; readonly blockMs: number },
  ): Promise<{ events: PoolEvent[]; cursor: string }>;
  /** Append to the audit trail of admin calls (capped: about the last 10,000). */
  appendAudit(entry: NewAuditEntry): Promise<void>;
  /** The last `limit` audit entries, newest first. */
  listAudit(limit: number): Promise<AuditEntry[]>;
}

/**
 * Sources: a pool's proxy list URLs (docs/spec.md §11), their last refresh, and which proxies
 * each one added (only those are removed when they vanish from its list).
 */
export interface StoreSources {
  /** Create or replace the source with this id (its status and members are kept). */
  putSource(source: SourceSpec): Promise<void>;
  /** The pool's sources in id order, each with its last refresh. */
  listSources(pool: string): Promise<SourceView[]>;
  /** Delete a source, its status and its member list (its proxies stay); false when unknown. */
  removeSource(pool: string, id: string): Promise<boolean>;
  /** Record a source's last refresh (nothing when the source is gone). */
  putSourceStatus(pool: string, id: string, status: SourceStatus): Promise<void>;
  /** The proxy ids the source added and still lists. */
  sourceMembers(pool: string, id: string): Promise<string[]>;
  /** How many proxy ids `sourceMembers` lists, without reading them. */
  sourceMemberCount(pool: string, id: string): Promise<number>;
  /** Replace that list (nothing when the source is gone). */
  setSourceMembers(pool: string, id: string, ids: readonly string[]): Promise<void>;
}

/** Recovery: noticing that the store lost its state, and holding grants until it is safe again. */
export interface StoreRecovery {
  /**
   * The pool's epoch, created when it has none. When the caller knew another epoch (the state was
   * lost), or says writes were lost, grants are held from `since` for the longer of `holdMs` and
   * the pool's recorded longest TTL (never shortened).
   */
  ensureEpoch(pool: string, request: EpochRequest): Promise<EpochState>;
  /** Whether grants are held in the pool, and the longest lease TTL granted there lately. */
  holdState(pool: string): Promise<HoldState>;
  /**
   * The store's server: an id that changes when it restarts or fails over, and whether writes can
   * have been lost by that. Rejects with `StoreUnavailableError` while it is down or still loading
   * its data.
   */
  server(): Promise<StoreServer>;
}

/** The backend itself: whether it answers, its reconnects, what other replicas release, closing. */
export interface StoreBackend {
  /** Answer whether the backend is reachable (for the health service). */
  ping(): Promise<boolean>;
  /**
   * Releases made through other instances of this store (other broker replicas on the same
   * backend), for the domain-keys watched; absent for a store that lives in one process.
   */
  releaseFeed?(): ReleaseFeed;
  /**
   * Be told each time the connection to the backend is established again (the server may have
   * restarted meanwhile); absent for a store that lives in one process.
   */
  onReconnect?(listener: () => void): void;
  close(): Promise<void>;
}

/**
 * Releases made elsewhere, as they happen: a broker watches the domain-keys it has waiting acquires
 * for, and tries them at once when a lease of one is released through another replica.
 */
export interface ReleaseFeed {
  /** Be told of releases of (pool, domainKey) from now on (until `unwatch`). */
  watch(pool: string, domainKey: string): void;
  unwatch(pool: string, domainKey: string): void;
  /** The listener of every release on a watched domain-key (one listener; a later call replaces it). */
  onRelease(listener: (pool: string, domainKey: string) => void): void;
  close(): Promise<void>;
}

/** The state of a leader lease after a campaign. */
export interface Campaign {
  /** The caller holds it. */
  readonly leader: boolean;
  /** The holder's term (0 = none). */
  readonly term: number;
  /** The holder ("" = none). */
  readonly holder: string;
  /** Until the holder's lease runs out unless renewed, ms (0 = none): when a standby may take it. */
  readonly remainingMs: number;
}
