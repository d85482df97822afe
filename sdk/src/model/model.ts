/**
 * Plain TypeScript model shared by the broker, its stores and the SDK. Times are epoch
 * milliseconds, durations milliseconds; the wire (protobuf) types are converted at the edges.
 */
import type { PolicyExpectations } from "./expectations.js";
import type { FallbackClaim } from "./fallback-claim.js";

/** How a use of a proxy went (`OutcomeKind` on the wire without its prefix). */
export type OutcomeKindName = "SUCCESS" | "RATE_LIMITED" | "BLOCKED" | "PROXY_ERROR" | "TARGET_ERROR" | "ABANDONED";

/** Every outcome kind, in wire order. */
export const OUTCOME_KIND_NAMES: readonly OutcomeKindName[] = Object.freeze([
  "SUCCESS",
  "RATE_LIMITED",
  "BLOCKED",
  "PROXY_ERROR",
  "TARGET_ERROR",
  "ABANDONED",
] as const);

/** The pool a request names when it names none ("" on the wire; docs/spec.md §4). */
export const DEFAULT_POOL = "default";

/** A proxy's state (`ProxyState` on the wire without its prefix). */
export type ProxyStateName = "ACTIVE" | "QUARANTINED" | "BLACKLISTED" | "DISABLED";

/** Why a renew or release found no lease held by the caller (`LostReason`). */
export type LostReasonName = "EXPIRED" | "REVOKED" | "NOT_FOUND";

/** A proxy as a validated admin spec: `id` is `host:port`, `url` what a worker's client uses. */
export interface ProxySpecInput {
  readonly id: string;
  readonly url: string;
  readonly tier: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** Everything the broker keeps per proxy. */
export interface ProxyView extends ProxySpecInput {
  readonly score: number;
  readonly state: ProxyStateName;
  readonly latencyEwmaMs: number;
  readonly successCount: number;
  readonly failureCount: number;
  /** Worker id of the last grant, "" if never granted. */
  readonly lastUsedBy: string;
  /** Epoch ms of the last grant, 0 if never granted. */
  readonly lastUsedAt: number;
  /** Epoch ms when a QUARANTINED proxy returns by itself, 0 otherwise. */
  readonly quarantineUntil: number;
  /** How many times the proxy has been quarantined. */
  readonly quarantineCount: number;
  /** The IP the sites see, as the last health check that showed it (G9); "" = not known. */
  readonly exitIp: string;
}

/**
 * Where the pacing interval of a (proxy, domain-key) pair is measured from (G2): "release" — the
 * next grant comes `min_interval` after the previous lease of the pair ended (released, expired
 * or lost) and after its grant; "grant" — after the previous grant only.
 */
export type PacingAnchor = "release" | "grant";

/** A domain policy as stored: durations in ms, 0 = not set (use the broker default). */
export interface DomainPolicySpec {
  /** `shop.example.com`, `*.example.com` (subdomains only) or `*`. */
  readonly pattern: string;
  /** Hosts matching this policy share this domain-key; "" = each host is its own key. */
  readonly group: string;
  readonly maxConcurrency: number;
  readonly minIntervalMs: number;
  readonly defaultTtlMs: number;
  readonly banTtlMs: number;
  /** What `min_interval` is measured from; "release" unless the policy says otherwise. */
  readonly pacing: PacingAnchor;
  /** Up to this much is added at random to the interval of each grant; 0 = none. */
  readonly jitterMs: number;
  /** Upper bound of the adaptive interval; 0 = the broker default. */
  readonly maxIntervalMs: number;
  /** No adaptive pacing: the interval stays `min_interval` whatever the site answers. */
  readonly fixedInterval: boolean;
  /** What a good answer of these hosts looks like (docs/spec.md §10); absent = nothing expected. */
  readonly expectations?: PolicyExpectations;
  /**
   * G8: domain-keys whose policies name the same isolation group never hold one proxy at the
   * same time. Absent or "" = none.
   */
  readonly isolationGroup?: string;
  /**
   * G8: a proxy moves to another domain-key of the group only this long after its last lease for
   * the key it had ended (ms). The group's window is the longest of its policies'. Absent = 0.
   */
  readonly affinityWindowMs?: number;
}

/** A policy set that was replaced, kept while leases granted under it may still be live. */
export interface RetiredPolicySet {
  /** Epoch ms of the change that replaced it. */
  readonly retiredAt: number;
  readonly policies: readonly DomainPolicySpec[];
}

/** The policies of a pool with the version that acquires must present (see `AcquireParams`). */
export interface PolicySet {
  /** `<epoch>.<n>`: never repeats, even after the store lost the pool's state. */
  readonly version: string;
  /** The pool's epoch (see `EpochState`); "" = none yet. */
  readonly epoch: string;
  readonly policies: readonly DomainPolicySpec[];
  /**
   * Earlier sets, newest first, kept for the longest lease TTL after they were replaced: a host
   * whose domain-key changed must not be granted under its new key while a lease of the old one
   * still runs.
   */
  readonly history: readonly RetiredPolicySet[];
  /** Proxies in the pool (any state) when the set was read: 0 = a pool that does not exist (yet). */
  readonly proxies: number;
}

/**
 * A pool's epoch: an id the store writes once and loses only with the pool's state (a Redis wiped,
 * restarted without persistence, failed over to a replica that missed writes). A broker that
 * finds the epoch it knew gone or changed has lost track of leases still in use: the store grants
 * nothing on the pool before `grantsFrom`.
 */
export interface EpochState {
  readonly epoch: string;
  /** Epoch ms before which the pool grants nothing (leases from before the loss may be in use). */
  readonly grantsFrom: number;
}

/** What a broker asks of `ensureEpoch`. */
export interface EpochRequest {
  /** The epoch the caller knew ("" = none: first sight of the pool). */
  readonly expected: string;
  /**
   * The longest lease TTL the caller knows to have been granted lately (ms): a hold after a loss
   * lasts at least this long, and as long as the store's own record of the pool's longest TTL
   * (`HoldState.longestTtlMs`) when that survived.
   */
  readonly holdMs: number;
  /** The caller knows the store lost writes (its server changed): hold even when the epoch is the same. */
  readonly lost: boolean;
  /**
   * When the loss was noticed (epoch ms; 0 or absent = now): a hold runs from then, so that a
   * request repeated after a failure never pushes the hold further.
   */
  readonly since?: number;
}

/** Whether grants in a pool are held after a loss of the store's state, and what a hold waits for. */
export interface HoldState {
  /** Grants are held until then (epoch ms; 0 = not held). */
  readonly heldUntil: number;
  /**
   * The longest lease TTL granted or renewed in the pool lately (ms): a lease with this TTL may
   * still be in use. 0 = none lately.
   */
  readonly longestTtlMs: number;
  /** The pool's policy version now (`PolicySet.version`): a broker whose copy differs reloads it. */
  readonly policyVersion: string;
}

/** The store's server as the broker last saw it. */
export interface StoreServer {
  /** Changes when it restarts or fails over (Redis `run_id`s). */
  readonly id: string;
  /**
   * Every write it acknowledged survives its restart (Redis: AOF with appendfsync always), and it
   * did not take over from a replica (which may have missed writes): a change of `id` to a
   * durable server lost nothing.
   */
  readonly durable: boolean;
}

/** A worker's use of a domain-key, as the store recorded it (§7: fallback shares follow demand). */
export interface DomainUse {
  readonly workerId: string;
  readonly domainKey: string;
  /** When it was first recorded (within its current listing: after a lapse it starts again). */
  readonly firstUsedAt: number;
  /** When a lease of the worker for it was last recorded. */
  readonly lastUsedAt: number;
}

/** What is reserved for silent workers that may be using their fallback shares (§7). */
export interface Reservations {
  /**
   * Worker → when its reservations hold for every caller (epoch ms; absent: at once). Before
   * that, a caller that keeps to a lease's TTL (`AcquireParams.honorsTtl`) may be granted — and
   * renewed — a pair reserved for it until then: the silent worker serves its claim only later
   * (docs/spec.md §7), and its share does not lie idle meanwhile.
   */
  readonly from?: Readonly<Record<string, number>>;
  /**
   * Proxy id → the worker it is reserved for, for the domain-keys of that worker's scope (the
   * ones it may use its share for in fallback); a worker without a scope: for every domain-key.
   */
  readonly proxies: Readonly<Record<string, string>>;
  /** Worker → the domain-keys its proxies are reserved for (absent: every domain-key). */
  readonly scopes?: Readonly<Record<string, readonly string[]>>;
  /** Domain-key → the worker every proxy is reserved for, for that domain-key. */
  readonly domains: Readonly<Record<string, string>>;
}

/** The pacing state of a domain-key (adaptive pacing, §2). */
export interface DomainPacing {
  readonly domainKey: string;
  /** The adaptive interval; 0 = not raised (the policy's `min_interval` applies). */
  readonly adaptiveMs: number;
  /** The longest interval that drew a RATE_LIMITED recently; 0 = none remembered. */
  readonly learnedMs: number;
  /** Epoch ms when `learnedMs` was last raised. */
  readonly learnedAt: number;
  /** Epoch ms when a SUCCESS last lowered the interval (0 = never). */
  readonly loweredAt: number;
}

/**
 * Worker ids a store keeps per pool (live workers, fallback-pool marks): beyond it the least
 * recently seen are forgotten, so invented ids cannot grow the store without bound.
 */
export const MAX_WORKERS_PER_POOL = 10_000;

/** What an acquire of a grouped host presents to the store (G8, sdk/src/model/isolation.ts). */
export interface IsolationParams {
  /** The host's isolation group now ("" = none: only former groups are checked). */
  readonly group: string;
  /** The group's affinity window (ms), the longest of its policies'. */
  readonly affinityMs: number;
  /** Other groups the host had under the retired policy sets: their records are checked too. */
  readonly formerGroups: readonly string[];
  /**
   * Domain-keys that joined the host's group since a retired set: leases granted before were
   * recorded in no group, so a live lease of one of them holds its proxy for the group too (its
   * live leases only: its pacing and bans are its own). Absent = none.
   */
  readonly joinedKeys?: readonly string[];
}

/** What the store needs to grant a lease: the request after validation and policy resolution. */
export interface AcquireParams {
  readonly pool: string;
  readonly domainKey: string;
  readonly workerId: string;
  /**
   * The caller's id of this request ("" = none): a grant is remembered for a minute under
   * (worker id, request id), and the same request again — a retry after a lost answer, through
   * any replica — gets the same lease while it is held. Denials are not remembered.
   */
  readonly requestId: string;
  readonly ttlMs: number;
  readonly maxConcurrency: number;
  /** The policy's interval: the adaptive interval never goes below it. */
  readonly minIntervalMs: number;
  /** What the interval is measured from (G2). */
  readonly pacing: PacingAnchor;
  /** Up to this much is added at random to each grant's interval; 0 = none. */
  readonly jitterMs: number;
  /** Adaptive pacing applies (RATE_LIMITED raises the domain-key's interval, SUCCESS lowers it). */
  readonly adaptive: boolean;
  /** Upper bound of the adaptive interval. */
  readonly maxIntervalMs: number;
  /**
   * Earlier domain-keys of this host (a policy change moved it); a proxy busy or paced under one
   * of them is not eligible. Usually empty.
   */
  readonly shadowKeys: readonly string[];
  /**
   * G8: the host's isolation group and the groups it had under retired policy sets (their
   * records are checked). Absent: no group now or lately (the common case). The domain-keys that
   * joined the group since are in `shadowKeys`.
   */
  readonly isolation?: IsolationParams | undefined;
  /** Ban length for BLOCKED outcomes on leases of this grant. */
  readonly banTtlMs: number;
  /** The `PolicySet.version` the parameters were resolved from; a mismatch → `stale-policy`. */
  readonly policyVersion: string;
  /** Grant only this proxy, or nothing ("" = any): a fallback lease handed over to the broker. */
  readonly proxyId: string;
  /** The worker keeps a fallback pool (recorded with it: only such workers get reservations). Default false. */
  readonly fallbackPool?: boolean;
  /** The worker stops using its broker leases as soon as the broker is unreachable (recorded with it). Default false. */
  readonly yieldsLeases?: boolean;
  /**
   * The caller stops using a lease once the TTL its grant carries (`LeaseView.ttlMs`) has passed
   * since it asked: a pair reserved for a silent worker whose reservation holds only from a later
   * moment (`Reservations.from`) may then be granted to it, with a TTL that ends by then. Default false.
   */
  readonly honorsTtl?: boolean;
  /**
   * Record this lease as the worker's use of the domain-key, listed for this long after its last
   * use (`LeaseStore.domainUses`). 0 or absent: not recorded.
   */
  readonly domainUseMs?: number;
  /**
   * G9: grant a proxy whose exit IP is not known although it shares its host with other proxies
   * of the pool (sessions of one endpoint, ports of one host) before a health check has seen it.
   * Default true (a pool without health checks can never learn exits); the broker sets false for
   * pools with a health check URL unless the pool's setting allows unknown exits.
   */
  readonly grantUnknownExits?: boolean;
  /**
   * The caller's authenticated name (its token's), recorded as the proxy's `lastUsedBy` instead
   * of the self-declared worker id. Default (or ""): none.
   */
  readonly identity?: string;
  /** "" = no sticky session. */
  readonly sessionKey: string;
  readonly sessionTtlMs: number;
  /** "" = any tier. */
  readonly tier: string;
  /** Every entry must equal the proxy's label. */
  readonly labels: Readonly<Record<string, string>>;
}

/**
 * An admin's action on proxies: `disable` (no new grants; live leases run out), `enable`, `ban`
 * for `ttlMs` on one domain-key or, with domainKey "", on every domain (a quarantine that does not
 * count), and `unban` (lifts either).
 */
export type ProxyAction =
  | { readonly kind: "disable" }
  | { readonly kind: "enable" }
  | { readonly kind: "ban"; readonly domainKey: string; readonly ttlMs: number }
  | { readonly kind: "unban"; readonly domainKey: string };

/** What an action did, by proxy id. */
export interface ProxyActionResult {
  readonly changed: string[];
  /** Already in that state. */
  readonly unchanged: string[];
  readonly notFound: string[];
}

/**
 * A state change of a pool that an operator watches: a pair banned after a BLOCKED outcome
 * (BAN) or cooled down after a RATE_LIMITED one (COOL_DOWN), a proxy quarantined or blacklisted by its score (QUARANTINE, BLACKLIST), an admin's
 * action (ADMIN), a policy change (POLICY), a health-check leader change (LEADER).
 */
export interface PoolEvent {
  /** Ordered, unique per pool: read on after it. */
  readonly id: string;
  /** Epoch ms. */
  readonly at: number;
  readonly kind: string;
  readonly proxyId: string;
  readonly domainKey: string;
  /** For BAN and QUARANTINE the until (epoch ms); for ADMIN and POLICY what was done. */
  readonly detail: string;
}

/** An event to append (the store gives it its id and time). */
export type NewPoolEvent = Omit<PoolEvent, "id" | "at">;

/** One admin call, as the audit trail keeps it. */
export interface AuditEntry {
  readonly id: string;
  readonly at: number;
  /** The caller's token name ("" = none). */
  readonly actor: string;
  readonly method: string;
  readonly pool: string;
  readonly detail: string;
}

export type NewAuditEntry = Omit<AuditEntry, "id" | "at">;

/** A granted lease. */
export interface LeaseView {
  readonly leaseId: string;
  readonly fencingToken: number;
  readonly pool: string;
  readonly domainKey: string;
  readonly proxy: ProxyView;
  readonly expireAt: number;
  readonly sessionKey: string;
  readonly sessionRebound: boolean;
  /**
   * The pacing interval this grant set before the pair's next grant, jitter included: 0 = the
   * pair is not paced now (no policy interval, no jitter, no learned interval); -1 = not known (a
   * grant by the broker on a host no policy names, whose limit adaptive pacing may still learn; or
   * a retried request given its first lease again).
   */
  readonly intervalMs: number;
  /**
   * How long the lease runs from the moment the store granted it (a retried request given its
   * lease again: from that answer): the TTL asked, or less — the rest of a retried request's
   * lease, or a TTL that ends when a silent worker's reservation of the pair holds (`honorsTtl`).
   * -1: not known (a lease off the wire from an older broker: the TTL asked).
   */
  readonly ttlMs: number;
}

/** Result of an acquire attempt (no waiting: the service layer waits). */
export type AcquireResult =
  | { readonly kind: "granted"; readonly lease: LeaseView }
  /** No eligible proxy; `retryAfterMs` = earliest known eligibility from now, -1 = unknown. */
  | { readonly kind: "denied"; readonly retryAfterMs: number }
  /** The pool's policies changed since `policyVersion`: reload them and try again. */
  | { readonly kind: "stale-policy"; readonly version: string };

export interface RenewParams {
  readonly leaseId: string;
  readonly fencingToken: number;
  /** 0 = keep the lease's own ttl. */
  readonly ttlMs: number;
  /**
   * The renewing worker ("" = unknown): a lease on a proxy reserved for another worker is not
   * extended (lost REVOKED); and the worker is recorded as seen when it was seen at or after
   * `liveSince` — renewals keep a live worker live (long downloads), but a silent one (which may
   * be leasing from its fallback pool) is back only with an acquire or a snapshot.
   */
  readonly workerId?: string;
  /** Epoch ms; default 0. */
  readonly liveSince?: number;
  /** As `AcquireParams.honorsTtl`: a lease on a pair reserved from a later moment is extended until then at most. */
  readonly honorsTtl?: boolean;
  /**
   * G8: the isolation group of a domain-key of `pool` now (group "" = none; undefined = not known:
   * the group of the lease's grant). The renewal writes the lease's hold in the group its key has
   * now, so that a lease granted before a policy change moved the key into a group, and kept alive
   * by renewals, is seen by the group. Absent: the group of the lease's grant.
   */
  readonly isolationOf?: (pool: string, domainKey: string) => Pick<IsolationParams, "group" | "affinityMs"> | undefined;
}

export type RenewResult =
  | {
      readonly kind: "renewed";
      readonly expireAt: number;
      /** How long it runs from the renew: the TTL asked, or less (`RenewParams.honorsTtl`). */
      readonly ttlMs: number;
    }
  | { readonly kind: "lost"; readonly reason: LostReasonName };

/** What the worker saw; durations in ms, 0 = not reported. */
export interface OutcomeInput {
  readonly kind: OutcomeKindName;
  readonly httpStatus: number;
  readonly latencyMs: number;
  readonly retryAfterMs: number;
}

export interface ReleaseParams {
  readonly leaseId: string;
  readonly fencingToken: number;
  readonly outcome: OutcomeInput;
  /** Acquire this in the same store step (release-and-acquire-next). */
  readonly next?: AcquireParams;
}

export type ReleaseResult =
  | { readonly kind: "released"; readonly next?: AcquireResult }
  | { readonly kind: "lost"; readonly reason: LostReasonName; readonly next?: AcquireResult };

/** An outcome seen without a broker lease (an SDK fallback pool replaying what it saw). */
export interface OutcomeReport {
  readonly proxyId: string;
  readonly domainKey: string;
  readonly outcome: OutcomeInput;
  /** Ban length should the outcome be BLOCKED (the domain's policy). */
  readonly banTtlMs: number;
}

/** Result of one health check of a proxy (SPEC §2: +3 / −10 / score × 0.7). */
export type HealthResult = "pass" | "fail" | "error";

export interface WorkerSeen {
  readonly workerId: string;
  readonly lastSeenAt: number;
  /** When it last said it keeps a fallback pool (an acquire or a snapshot request); 0 = never. */
  readonly fallbackPoolAt: number;
  /**
   * When it last said it stops using its broker leases as soon as the broker is unreachable (the
   * Python client); 0 = never. Absent: 0.
   */
  readonly yieldsLeasesAt?: number;
  /**
   * The time of the latest list of live workers it said it holds (a snapshot or membership it
   * fetched: its `snapshot_time`, in the broker's clock); absent: none said.
   */
  readonly listsAt?: number;
  /**
   * The broker time of the latest pong it said it received (`Ping.heard_time`): it was in
   * contact with the broker up to then, both ways. Absent: it never said.
   */
  readonly heardAt?: number;
  /**
   * Its fallback claims, the latest first, then the one before (a worker uses a claim once
   * acknowledged: one of these two). Only from `liveWorkers(…, { claims: true })`.
   */
  readonly claims?: readonly FallbackClaim[];
}

/** What a worker's ping says (`hearWorker`). */
export interface WorkerHeard {
  /** The broker time of the latest pong it received (epoch ms); 0: none yet. */
  readonly heardAt: number;
  /** Its fallback claim, when the ping carries one: recorded as its latest. */
  readonly claim?: FallbackClaim;
  /**
   * The claim is its process's first (it uses none yet): the claims recorded before it, a
   * predecessor's under the same worker id, are forgotten — unless one newer than it is kept (a
   * ping that arrived late).
   */
  readonly fresh?: boolean;
}

/** What a worker says when it fetches a snapshot (`touchWorker`). */
export interface WorkerTouch {
  /** The snapshot time of the latest list of live workers it holds (0 or absent: none). */
  readonly listsAt?: number;
}

export interface PoolStats {
  readonly total: number;
  readonly active: number;
  readonly quarantined: number;
  readonly blacklisted: number;
  readonly disabled: number;
  readonly liveWorkers: number;
}
