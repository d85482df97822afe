import { hostFromDomain, InvalidInputError } from "../model/domain-key.js";
import type { AcquireParams, LeaseView, OutcomeInput, ReleaseResult, RenewResult } from "../model/model.js";
import { hostIsolation } from "../model/isolation.js";
import { effectivePolicy, policyParams, type PolicyDefaults } from "../model/policy.js";
import { BROKER_DEFAULTS } from "../model/broker-defaults.js";
import type { MemoryStore } from "../engine/memory-store.js";
import type { FallbackOutcomes } from "./outcome-buffer.js";
import { poolName, policySetOf, type PoolMembership } from "./pool-membership.js";

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

/** Options of `FallbackLeases` (see `FallbackPoolOptions` for each). */
export interface FallbackLeasesOptions {
  readonly workerId: string;
  readonly clock: () => number;
  readonly defaults: PolicyDefaults;
  readonly sessionTtlMs?: number;
}

/** Prefix of fallback lease ids; broker lease ids are bare hex. */
export const FALLBACK_LEASE_PREFIX = "fb-";
/**
 * The shortest hold of a domain-key's pairs after entering fallback: long enough for a lease of
 * the pair that another worker just gave up (its signal aborted) to stop at the site.
 */
const SWITCH_HOLD_MS = 250;
/** Local retry interval of a waiting acquire when nothing wakes it earlier. */
const POLL_MS = 50;
/** Local lease records are swept after this many grants. */
const SWEEP_EVERY = 1024;
/** A local lease record outlives its expiry by max(ttl, this), like the store's tombstones. */
const KEEP_MS = 600_000;

/** What the pool remembers of a lease it granted (keyed by the store's lease id). */
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
 * The leases of a fallback pool: acquires from the stores of `membership` with the policies of
 * the source in use, the hold after entering fallback, renew and release (an applied outcome is
 * kept once in `outcomes`), and what the local leases tell of pacing (see `FallbackPool` for each
 * public method).
 */
export class FallbackLeases {
  private readonly clock: () => number;
  private readonly leases = new Map<string, LocalLease>();
  private readonly wakers = new Set<() => void>();
  private grants = 0;
  /** Epoch ms this worker entered fallback mode (0: not in it; see `enter`). */
  private since = 0;
  /** Beyond the per-domain-key hold, nothing at all is granted before since + this (see `holdAtLeast`). */
  private holdMs = 0;
  /** False after `leave` until the next `enter`: nothing is granted (the broker serves again). */
  private serving = true;

  constructor(
    private readonly opts: FallbackLeasesOptions,
    private readonly membership: PoolMembership,
    private readonly outcomes: FallbackOutcomes,
  ) {
    this.clock = opts.clock;
  }

  enter(at: number): void {
    this.since = at;
    this.holdMs = 0;
    this.serving = true;
  }

  othersStopBy(at: number): void {
    if (this.since > 0 && at > this.since) this.since = at;
  }

  holdAtLeast(ms: number): void {
    this.holdMs = Math.max(this.holdMs, ms);
  }

  leave(): void {
    this.since = 0;
    this.holdMs = 0;
    this.serving = false;
    this.wake();
  }

  async adopt(req: FallbackAcquireRequest, proxyId: string): Promise<FallbackLease | undefined> {
    const host = hostFromDomain(req.host);
    const r = await this.attempt({ ...req, maxWaitMs: 0 }, host, proxyId);
    return r.kind === "granted" ? r.lease : undefined;
  }

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

  async renew(leaseId: string, fencingToken: number, ttlMs: number): Promise<RenewResult> {
    const id = innerId(leaseId);
    if (id === undefined) return { kind: "lost", reason: "NOT_FOUND" };
    const local = this.leases.get(id);
    const r = await (local?.store ?? this.membership.store).renew({ leaseId: id, fencingToken, ttlMs });
    if (r.kind === "renewed" && local !== undefined && local.token === fencingToken) {
      local.expireAt = r.expireAt;
      local.keepUntil = r.expireAt + Math.max(local.ttlMs, ttlMs, KEEP_MS, local.afterMs);
    }
    return r;
  }

  async release(leaseId: string, fencingToken: number, outcome: OutcomeInput): Promise<ReleaseResult> {
    const id = innerId(leaseId);
    if (id === undefined) return { kind: "lost", reason: "NOT_FOUND" };
    const local = this.leases.get(id);
    const r = await (local?.store ?? this.membership.store).release({ leaseId: id, fencingToken, outcome });
    const applied = r.kind === "released" || r.reason === "EXPIRED";
    if (local !== undefined && local.token === fencingToken && local.endedAt === 0) local.endedAt = Math.min(this.clock(), local.expireAt);
    const dropped = this.outcomes.dropped;
    // ABANDONED changes nothing at the broker: not worth a replay
    if (local !== undefined && applied && local.token === fencingToken && !local.outcomeBuffered && outcome.kind !== "ABANDONED") {
      local.outcomeBuffered = true;
      const { pool, proxyId, domainKey } = local;
      this.outcomes.push({ pool, proxyId, domainKey, outcome, observedAt: this.clock(), workerId: this.opts.workerId });
    }
    this.wake();
    this.outcomes.reportSince(dropped);
    return r;
  }

  usedLately(proxyId: string, domainKey: string, now: number): boolean {
    for (const l of this.leases.values()) {
      // a lease of a proxy of the same exit IP holds the pair too (G9)
      if (l.domainKey !== domainKey || !this.membership.sameExit(l.proxyId, proxyId)) continue;
      const end = l.endedAt > 0 ? l.endedAt : l.expireAt;
      if (end + l.intervalMs > now) return true;
    }
    return false;
  }

  quiet(now: number): boolean {
    for (const l of this.leases.values()) {
      const end = l.endedAt > 0 ? l.endedAt : l.expireAt;
      if (end + l.afterMs > now) return false;
    }
    return true;
  }

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

  /** Wake waiting acquires (a release, a rebuild, or leaving fallback). */
  wake(): void {
    for (const w of [...this.wakers]) w();
  }

  /** One store attempt with the policies of the source in use. */
  private async attempt(req: FallbackAcquireRequest, host: string, proxyId = ""): Promise<FallbackAcquireResult> {
    await this.membership.ready;
    const source = this.membership.source;
    const pool = poolName(req.pool);
    if (!this.serving && proxyId === "") return { kind: "denied", retryAfterMs: -1, closed: true };
    if (source === undefined || source.pool !== pool) return { kind: "denied", retryAfterMs: -1 };
    const eff = effectivePolicy(source.policies, host, this.opts.defaults);
    // the broker's adaptive interval of the domain-key, when it had raised it
    const minIntervalMs = Math.max(eff.minIntervalMs, source.pacing[eff.domainKey] ?? 0);
    // G8 among this worker's own leases: the local store keeps keys of one isolation group apart
    const isolation = hostIsolation(policySetOf(source), host, eff.domainKey);
    const affinityMs = isolation.params?.affinityMs ?? 0;
    // what the acknowledged claim names: "sole" only when no other worker was listed with a key
    // of the same share key (domain-shares.ts)
    const route = this.membership.routeOf(eff.domainKey);
    if (route === "none") return { kind: "denied", retryAfterMs: -1, unlisted: true };
    const store = route === "sole" ? await this.membership.soleFor(source) : this.membership.store;
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
}

/** The store's lease id inside a fallback lease id. */
function innerId(leaseId: string): string | undefined {
  return leaseId.startsWith(FALLBACK_LEASE_PREFIX) ? leaseId.slice(FALLBACK_LEASE_PREFIX.length) : undefined;
}
