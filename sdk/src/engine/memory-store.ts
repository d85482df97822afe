import { proxyAction } from "./memory/proxy-action.js";
import { StaleTermError } from "./store.js";
import type { Campaign } from "./store.js";
import type { AuditEntry, NewAuditEntry, NewPoolEvent, PoolEvent, ProxyAction, ProxyActionResult } from "../model/model.js";
import { randomUUID } from "node:crypto";
import type {
  DomainUse,
  HoldState,
  Reservations,
  StoreServer,
  AcquireParams,
  AcquireResult,
  DomainPacing,
  EpochRequest,
  EpochState,
  DomainPolicySpec,
  HealthResult,
  OutcomeReport,
  PolicySet,
  PoolStats,
  ProxySpecInput,
  ProxyView,
  ReleaseParams,
  ReleaseResult,
  RenewParams,
  RenewResult,
  WorkerSeen,
  WorkerTouch,
  WorkerHeard,
} from "../model/model.js";
import type { ScoringConfig } from "../model/scoring.js";
import { acquire } from "./memory/acquire.js";
import { addProxies, removeProxies, restoreProxies } from "./memory/admin.js";
import { EngineState } from "./memory/engine-state.js";
import { release, renew } from "./memory/lease-ops.js";
import { reportOutcome } from "./memory/report.js";
import { deletePolicy, listPolicies, setPolicy } from "./memory/policies.js";
import { domainPacing, listProxies, liveWorkers, poolStats } from "./memory/queries.js";
import { applyHealth } from "./memory/score-change.js";
import { learnExits, recordExit } from "./memory/exit-health.js";
import type { ExitMember } from "../model/exit-groups.js";
import { viewOf } from "./memory/records.js";
import { Leaders } from "./memory/leaders.js";
import * as workers from "./memory/workers.js";
import { SourceBook } from "./memory/sources.js";
import type { SourceSpec, SourceStatus, SourceView } from "../model/source.js";
import { StoreUnavailableError, type LeaseStore } from "./store.js";

/** Options of a `MemoryStore`. */
export interface MemoryStoreOptions {
  /** The numbers of SPEC §2. */
  readonly scoring: ScoringConfig;
  /** Epoch ms; the store reads time from nothing else. Default `Date.now`. */
  readonly clock?: () => number;
  /** Uniform in [0, 1), for selection and quarantine jitter (not lease ids). Default `Math.random`. */
  readonly random?: () => number;
  /** How long a replaced policy set is kept (`PolicySet.history`). Default 2 h. */
  readonly policyHistoryMs?: number;
}

/** Default of `policyHistoryMs`: twice the longest lease TTL the broker allows by default. */
export const POLICY_HISTORY_MS = 2 * 3_600_000;

/**
 * The in-memory `LeaseStore`: the broker's store when `REDIS_URL` is unset, and the SDK's local
 * fallback pool. Pure TypeScript, no timers, no I/O. Every operation runs synchronously to its
 * end before its promise resolves, so each one is atomic like a Lua script. Semantics:
 * docs/store-semantics.md.
 *
 * After `close()` every operation rejects with `StoreUnavailableError` and `ping()` answers false.
 */
export class MemoryStore implements LeaseStore {
  private readonly leaders = new Leaders();
  private readonly sources = new SourceBook();
  private readonly state: EngineState;
  private readonly policyHistoryMs: number;
  /** This store's server id: one process, never restarted while it lives. */
  private readonly id = `memory-${randomUUID()}`;
  private closed = false;

  constructor(options: MemoryStoreOptions) {
    this.state = new EngineState({
      scoring: options.scoring,
      clock: options.clock ?? Date.now,
      random: options.random ?? Math.random,
    });
    this.policyHistoryMs = options.policyHistoryMs ?? POLICY_HISTORY_MS;
  }

  async acquire(params: AcquireParams): Promise<AcquireResult> {
    return acquire(this.open(), params, this.state.ctx.clock());
  }

  async renew(params: RenewParams): Promise<RenewResult> {
    return renew(this.open(), params, this.state.ctx.clock());
  }

  async release(params: ReleaseParams): Promise<ReleaseResult> {
    return release(this.open(), params, this.state.ctx.clock());
  }

  async reportOutcomes(pool: string, reports: readonly OutcomeReport[]): Promise<number> {
    const state = this.open();
    let applied = 0;
    for (const r of reports) if (reportOutcome(state, pool, r, state.ctx.clock())) applied++;
    return applied;
  }

  async addProxies(pool: string, specs: readonly ProxySpecInput[]): Promise<{ added: string[]; updated: string[] }> {
    const state = this.open();
    return addProxies(state.ctx, state.pool(pool), specs);
  }

  async removeProxies(pool: string, ids: readonly string[]): Promise<{ removed: string[]; notFound: string[] }> {
    const state = this.open();
    return removeProxies(state.pool(pool), ids, state.ctx.clock());
  }

  async restoreProxies(pool: string, ids: readonly string[]): Promise<{ restored: string[]; notFound: string[] }> {
    const state = this.open();
    return restoreProxies(state.ctx, state.pool(pool), ids);
  }

  async appendEvent(pool: string, event: NewPoolEvent): Promise<void> {
    const state = this.open();
    state.pool(pool).emit(state.ctx.clock(), event);
  }

  async readEvents(
    pool: string,
    after: string,
    opts: { readonly count: number; readonly blockMs: number },
  ): Promise<{ events: PoolEvent[]; cursor: string }> {
    const state = this.open();
    const log = state.pool(pool).events;
    const from = after === "$" ? log.lastId : after;
    let events = log.after(from, opts.count);
    if (events.length === 0 && opts.blockMs > 0) {
      await log.wait(opts.blockMs);
      events = log.after(from, opts.count);
    }
    return { events, cursor: events.at(-1)?.id ?? from };
  }

  async appendAudit(entry: NewAuditEntry): Promise<void> {
    const state = this.open();
    const at = state.ctx.clock();
    state.audit.append(at, (id) => ({ id, at, ...entry }));
  }

  async listAudit(limit: number): Promise<AuditEntry[]> {
    return this.open().audit.newest(limit);
  }

  async proxyAction(pool: string, ids: readonly string[], action: ProxyAction): Promise<ProxyActionResult> {
    const state = this.open();
    const p = state.findPool(pool);
    if (p === undefined) return { changed: [], unchanged: [], notFound: [...ids] };
    return proxyAction(p, ids, action, state.ctx.clock());
  }

  async listProxies(pool: string, page: { size: number; after: string }): Promise<{ proxies: ProxyView[]; next: string }> {
    return listProxies(this.open().findPool(pool), page);
  }

  async recordHealth(pool: string, id: string, result: HealthResult, term = 0, exitIp = ""): Promise<ProxyView | undefined> {
    const state = this.open();
    const found = state.findPool(pool);
    if (found === undefined) return undefined;
    if (term > 0) {
      if (term < found.healthTerm)
        throw new StaleTermError(`a health-check result of term ${term} was refused: a newer leader checks pool ${pool}`);
      found.healthTerm = term;
    }
    const now = state.ctx.clock();
    const view = applyHealth(state.ctx, found, id, result, now);
    if (view === undefined) return undefined;
    recordExit(state, found, { id, result, exitIp, now });
    return viewOf(found.proxies.get(id)!);
  }

  /**
   * The exits of proxies of `pool` as the broker's snapshot shows them (G9; a fallback pool's
   * local store): recorded as a health check would record them, without scoring, events or
   * audit. Unknown ids and "" are skipped.
   */
  async useExits(pool: string, members: readonly ExitMember[]): Promise<void> {
    const state = this.open();
    const found = state.findPool(pool);
    if (found !== undefined) learnExits(found, members, state.ctx.clock());
  }

  async campaign(name: string, owner: string, ttlMs: number): Promise<Campaign> {
    const state = this.open();
    return this.leaders.campaign(name, owner, ttlMs, state.ctx.clock());
  }

  async resign(name: string, owner: string): Promise<void> {
    this.leaders.resign(name, owner);
  }

  async poolStats(pool: string, liveSinceMs: number): Promise<PoolStats> {
    return poolStats(this.open().findPool(pool), liveSinceMs);
  }

  async reserve(pool: string, reserved: Reservations): Promise<void> {
    const p = this.open().pool(pool);
    p.reserved.clear();
    p.reservedDomains.clear();
    p.reservedScopes.clear();
    p.reservedFrom.clear();
    for (const [id, owner] of Object.entries(reserved.proxies)) p.reserved.set(id, owner);
    for (const [owner, at] of Object.entries(reserved.from ?? {})) p.reservedFrom.set(owner, at);
    for (const [owner, keys] of Object.entries(reserved.scopes ?? {})) p.reservedScopes.set(owner, new Set(keys));
    for (const [key, owner] of Object.entries(reserved.domains)) p.reservedDomains.set(key, owner);
  }

  async domainUses(pool: string, sinceMs: number): Promise<DomainUse[]> {
    return this.open().findPool(pool)?.domainUses.since(sinceMs) ?? [];
  }

  async rememberDomainUses(pool: string, uses: readonly DomainUse[]): Promise<void> {
    if (uses.length === 0) return;
    const p = this.open().pool(pool);
    for (const u of uses) p.domainUses.remember(u);
  }

  async touchWorker(pool: string, workerId: string, touch: WorkerTouch = {}): Promise<void> {
    const state = this.open();
    workers.touchWorker(state.pool(pool), workerId, touch, state.ctx.clock());
  }

  async rememberWorkers(pool: string, seen: readonly WorkerSeen[]): Promise<void> {
    if (seen.length === 0) return;
    workers.rememberWorkers(this.open().pool(pool), seen);
  }

  async hearWorker(pool: string, workerId: string, heard: WorkerHeard): Promise<void> {
    const state = this.open();
    workers.hearWorker(state.pool(pool), workerId, heard, state.ctx.clock());
  }

  async forgetWorker(pool: string, workerId: string): Promise<boolean> {
    return workers.forgetWorker(this.open().findPool(pool), workerId);
  }

  async liveWorkers(pool: string, sinceMs: number, opts: { readonly claims?: boolean } = {}): Promise<WorkerSeen[]> {
    return liveWorkers(this.open().findPool(pool), sinceMs, opts.claims === true);
  }

  async setPolicy(pool: string, policy: DomainPolicySpec): Promise<void> {
    const state = this.open();
    setPolicy(state.pool(pool), policy, { now: state.ctx.clock(), keepMs: this.policyHistoryMs });
  }

  async deletePolicy(pool: string, pattern: string): Promise<boolean> {
    const state = this.open();
    return deletePolicy(state.findPool(pool), pattern, { now: state.ctx.clock(), keepMs: this.policyHistoryMs });
  }

  async listPolicies(pool: string): Promise<PolicySet> {
    const state = this.open();
    return listPolicies(state.findPool(pool), state.ctx.clock(), this.policyHistoryMs);
  }

  async domainPacing(pool: string, domainKeys: readonly string[], limit: number): Promise<DomainPacing[]> {
    return domainPacing(this.open().findPool(pool), domainKeys, limit);
  }

  async ensureEpoch(pool: string, request: EpochRequest): Promise<EpochState> {
    const state = this.open();
    const p = state.pool(pool);
    const now = state.ctx.clock();
    const since = request.since !== undefined && request.since > 0 ? request.since : now;
    const hold = Math.max(request.holdMs, p.longestTtl.get(now));
    if (p.epoch === "") {
      p.epoch = `${now * 1000}`;
      p.grantsFrom = request.expected !== "" ? since + request.holdMs : now;
    } else if (request.lost || (request.expected !== "" && request.expected !== p.epoch)) {
      p.grantsFrom = Math.max(p.grantsFrom, since + hold);
    }
    return { epoch: p.epoch, grantsFrom: p.grantsFrom };
  }

  async holdState(pool: string): Promise<HoldState> {
    const state = this.open();
    const p = state.findPool(pool);
    const now = state.ctx.clock();
    if (p === undefined) return { heldUntil: 0, longestTtlMs: 0, policyVersion: ".0" };
    return { heldUntil: p.grantsFrom > now ? p.grantsFrom : 0, longestTtlMs: p.longestTtl.get(now), policyVersion: p.policyVersion };
  }

  async putSource(source: SourceSpec): Promise<void> {
    this.open();
    this.sources.put(source);
  }

  async listSources(pool: string): Promise<SourceView[]> {
    this.open();
    return this.sources.list(pool);
  }

  async removeSource(pool: string, id: string): Promise<boolean> {
    this.open();
    return this.sources.remove(pool, id);
  }

  async putSourceStatus(pool: string, id: string, status: SourceStatus): Promise<void> {
    this.open();
    this.sources.setStatus(pool, id, status);
  }

  async sourceMembers(pool: string, id: string): Promise<string[]> {
    this.open();
    return this.sources.members(pool, id);
  }

  async sourceMemberCount(pool: string, id: string): Promise<number> {
    this.open();
    return this.sources.members(pool, id).length;
  }

  async setSourceMembers(pool: string, id: string, ids: readonly string[]): Promise<void> {
    this.open();
    this.sources.setMembers(pool, id, ids);
  }

  /** The process itself: it never restarts under its broker, and loses nothing while it runs. */
  async server(): Promise<StoreServer> {
    this.open();
    return { id: this.id, durable: true };
  }

  async ping(): Promise<boolean> {
    return !this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** The state, or a rejection once closed. */
  private open(): EngineState {
    if (this.closed) throw new StoreUnavailableError("memory store is closed");
    return this.state;
  }
}
