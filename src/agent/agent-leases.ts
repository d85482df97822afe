import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { BrokerClientError, LeaseLostError } from "@proxybroker/sdk";
import type { Lease, LeaseOutcome, ProxyBrokerClient } from "@proxybroker/sdk";
import { LeaseSchema, LeaseSource } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type {
  AcquireLeaseRequest,
  Lease as WireLease,
  ReleaseLeaseRequest,
  RenewLeaseRequest,
} from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { LostReasonName } from "@proxybroker/sdk/model";
import { durationOf, msOf, timestampOf } from "@proxybroker/sdk/wire";
import { BrokerError } from "../grpc/errors.js";
import { checkOutcome, checkPool } from "../grpc/validate.js";

/**
 * The agent's leases: what its clients hold, each an SDK lease of the agent's client for the
 * pool (a broker lease, or one of its fallback pool). A client sees the id and fencing token of
 * its grant for as long as it holds it, whatever hand-over the SDK makes meanwhile.
 *
 * Every grant runs at most `leaseTtlMs` (a second by default) and only a client's renew extends
 * it: the agent relays each renew and beats no heartbeat of its own, so a client gone leaves a
 * lease that ends by its TTL, and a client cut off from the broker with the agent stops using its
 * lease within that second of the last renewal the broker confirmed. The agent says so to the
 * broker (`yields_leases`): workers entering their fallback pools wait that second for it, no
 * longer (G1 with no wait on the TTLs its clients asked for).
 */
export interface AgentLeasesOptions {
  /** The agent's SDK client of a pool. */
  readonly client: (pool: string) => ProxyBrokerClient;
  /** The pool of a request that names none. */
  readonly pool: string;
  /** The longest a grant or renewal runs (ms). */
  readonly leaseTtlMs: number;
  /** A retry_after longer than this is cut (as the broker cuts it). */
  readonly maxRetryAfterMs: number;
  /** How long a lost lease's id still answers with its reason (then NOT_FOUND). */
  readonly lostMemoryMs?: number;
}

/** A lease as the agent's client holds it. */
interface Held {
  readonly lease: Lease;
  readonly pool: string;
  readonly fencingToken: bigint;
  /** Tell whoever listens (the stream it was granted on) that it was lost. */
  readonly onLost: Set<(reason: LostReasonName) => void>;
}

/** A renew's answer. */
export interface AgentRenewed {
  readonly expireAt: number;
  readonly ttlMs: number;
}

/** A renew or release of a lease the caller no longer holds. */
export class AgentLeaseLost extends Error {
  constructor(
    readonly leaseId: string,
    readonly reason: LostReasonName,
  ) {
    super(`lease ${leaseId} lost: ${reason}`);
  }
}

const LOST_MEMORY_MS = 60_000;

export class AgentLeases {
  private readonly held = new Map<string, Held>();
  private readonly lost = new Map<string, LostReasonName>();

  constructor(private readonly opts: AgentLeasesOptions) {}

  /** Leases held by the agent's clients. */
  get size(): number {
    return this.held.size;
  }

  /** Grant as the broker would: the lease, or a `BrokerError` (the broker's status and trailers). */
  async acquire(req: AcquireLeaseRequest, signal?: AbortSignal): Promise<WireLease> {
    const pool = checkPool(req.pool === "" ? this.opts.pool : req.pool);
    if (req.proxyId !== "")
      throw new BrokerError(status.INVALID_ARGUMENT, "proxy_id: an agent grants any proxy of the pool, not a named one");
    const target = req.targetUrl !== "" ? req.targetUrl : req.domain;
    if (target === "") throw new BrokerError(status.INVALID_ARGUMENT, "domain or target_url is required");
    const asked = msOf(req.ttl);
    let lease: Lease;
    try {
      lease = await this.opts.client(pool).acquire(target, {
        ttlMs: asked > 0 ? Math.min(asked, this.opts.leaseTtlMs) : this.opts.leaseTtlMs,
        maxWaitMs: msOf(req.maxWait),
        ...(req.sessionKey === "" ? {} : { sessionKey: req.sessionKey }),
        ...(req.tier === "" ? {} : { tier: req.tier }),
        labels: { ...req.labels },
        heartbeat: false,
      });
    } catch (err) {
      throw toBrokerError(err);
    }
    if (signal?.aborted === true) {
      // nobody waits for it any more: given back unused
      await lease.release({ kind: "ABANDONED" }).catch(() => undefined);
      throw new BrokerError(status.CANCELLED, "call cancelled");
    }
    const id = lease.id;
    const held: Held = { lease, pool, fencingToken: BigInt(lease.fencingToken), onLost: new Set() };
    this.held.set(id, held);
    lease.signal.addEventListener("abort", () => this.ended(id, held), { once: true });
    return this.toWire(id, held, lease.grantRunsMs);
  }

  /** Call `fn` when lease `leaseId` is lost (revoked, expired) before its release. */
  onLost(leaseId: string, fn: (reason: LostReasonName) => void): () => void {
    const h = this.held.get(leaseId);
    if (h === undefined) return () => undefined;
    h.onLost.add(fn);
    return () => h.onLost.delete(fn);
  }

  async renew(req: RenewLeaseRequest): Promise<AgentRenewed> {
    const h = this.holding(req.leaseId, req.fencingToken);
    const asked = msOf(req.ttl);
    const ttlMs = asked > 0 ? Math.min(asked, this.opts.leaseTtlMs) : h.lease.ttlMs;
    let runs: number;
    try {
      runs = await h.lease.renew(ttlMs);
    } catch (err) {
      if (err instanceof LeaseLostError) throw this.lostNow(req.leaseId, err.reason);
      throw toBrokerError(err);
    }
    if (runs <= 0) {
      if (h.lease.ended) throw this.lostNow(req.leaseId, "EXPIRED");
      throw new BrokerError(status.UNAVAILABLE, "the renewal was not confirmed: renew again", { "retry-after-ms": "0" });
    }
    return { expireAt: h.lease.expireAt, ttlMs: runs };
  }

  /** Release with the client's outcome; then its `next` acquire, if any, is the caller's to run. */
  async release(req: ReleaseLeaseRequest): Promise<void> {
    const h = this.holding(req.leaseId, req.fencingToken);
    const outcome = outcomeOf(req, this.opts.maxRetryAfterMs);
    this.held.delete(req.leaseId);
    try {
      await h.lease.release(outcome);
    } catch (err) {
      throw toBrokerError(err);
    }
  }

  /** Give back a lease granted to nobody (its answer could not be sent): ABANDONED. */
  async abandon(leaseId: string): Promise<void> {
    const h = this.held.get(leaseId);
    if (h === undefined) return;
    this.held.delete(leaseId);
    await h.lease.release({ kind: "ABANDONED" }).catch(() => undefined);
  }

  /** Release every lease (the agent shuts down). */
  async releaseAll(): Promise<void> {
    const all = [...this.held.values()];
    this.held.clear();
    await Promise.all(all.map((h) => h.lease.release({ kind: "ABANDONED" }).catch(() => undefined)));
  }

  /** The lease a renew or release names, if its caller still holds it; else `AgentLeaseLost`. */
  private holding(leaseId: string, fencingToken: bigint): Held {
    const h = this.held.get(leaseId);
    if (h === undefined) throw new AgentLeaseLost(leaseId, this.lost.get(leaseId) ?? "NOT_FOUND");
    if (h.fencingToken !== fencingToken) throw new AgentLeaseLost(leaseId, "REVOKED");
    if (h.lease.ended) throw this.lostNow(leaseId, reasonOf(h.lease));
    return h;
  }

  private lostNow(leaseId: string, reason: LostReasonName): AgentLeaseLost {
    this.remember(leaseId, reason);
    return new AgentLeaseLost(leaseId, reason);
  }

  /** The SDK ended a lease its client did not release: lost (expired, revoked). */
  private ended(id: string, h: Held): void {
    if (this.held.get(id) !== h) return;
    const reason = reasonOf(h.lease);
    this.remember(id, reason);
    for (const fn of h.onLost) fn(reason);
  }

  private remember(id: string, reason: LostReasonName): void {
    this.held.delete(id);
    this.lost.set(id, reason);
    const t = setTimeout(() => this.lost.delete(id), this.opts.lostMemoryMs ?? LOST_MEMORY_MS);
    t.unref();
  }

  private toWire(id: string, h: Held, runsMs: number): WireLease {
    const l = h.lease;
    return create(LeaseSchema, {
      leaseId: id,
      fencingToken: h.fencingToken,
      pool: h.pool,
      domain: l.domain,
      proxy: { id: l.proxy.id, url: l.proxy.url, tier: l.proxy.tier, labels: { ...l.proxy.labels }, score: l.proxy.score },
      expireTime: timestampOf(l.expireAt),
      sessionKey: l.sessionKey,
      sessionRebound: l.sessionRebound,
      reusable: false,
      ttl: durationOf(runsMs),
      pacingUnknown: l.pacingUnknown,
      source: l.source === "broker" ? LeaseSource.BROKER : LeaseSource.FALLBACK,
    });
  }
}

function reasonOf(lease: Lease): LostReasonName {
  const r: unknown = lease.signal.reason;
  return r instanceof LeaseLostError ? r.reason : "EXPIRED";
}

/** The client's outcome, checked as the broker checks it. */
function outcomeOf(req: ReleaseLeaseRequest, maxRetryAfterMs: number): LeaseOutcome {
  const o = checkOutcome(req.outcome, { maxRetryAfterMs });
  const bytes = Number(req.outcome?.bytes ?? 0);
  const detail = req.outcome?.detail ?? "";
  return {
    kind: o.kind,
    ...(o.httpStatus > 0 ? { httpStatus: o.httpStatus } : {}),
    ...(o.latencyMs > 0 ? { latencyMs: o.latencyMs } : {}),
    ...(o.retryAfterMs > 0 ? { retryAfterMs: o.retryAfterMs } : {}),
    ...(bytes > 0 ? { bytes } : {}),
    ...(detail === "" ? {} : { detail: detail.slice(0, 256) }),
  };
}

/** An SDK error as the broker's status: its code, message and retry_after. */
export function toBrokerError(err: unknown): BrokerError {
  if (err instanceof BrokerClientError) {
    const trailers: Record<string, string> = err.retryAfterMs >= 0 ? { "retry-after-ms": String(Math.ceil(err.retryAfterMs)) } : {};
    return new BrokerError(err.code, err.message, trailers, { cause: err });
  }
  return BrokerError.from(err);
}
