import { status } from "@grpc/grpc-js";
import type { LeaseView } from "../model/model.js";
import type { FallbackPool } from "../fallback/index.js";
import { BrokerClientError, InvalidArgumentError, LeaseLostError, NoProxyAvailableError } from "./errors.js";
import type { LeaseBackend, LeaseOutcome, Renewed } from "./lease.js";
import type { AcquireRequest, Granted } from "./broker-backend.js";
import { hostFromDomain, hostFromUrl, InvalidInputError } from "../model/domain-key.js";
import type { FallbackAcquireRequest } from "../fallback/index.js";

/** Leases from this worker's local fallback pool, with the `LeaseBackend` of fallback leases. */
export class FallbackBackend implements LeaseBackend {
  constructor(
    private readonly pool: FallbackPool,
    private readonly monotonic: () => number,
  ) {}

  get available(): boolean {
    return this.pool.hasPool;
  }

  /** `holdWaitMs`: how long the caller can wait for the hold after entering fallback. */
  async acquire(req: AcquireRequest, holdWaitMs = 0): Promise<Granted> {
    const sentAt = this.monotonic();
    const r = await this.pool.acquire({ ...requestOf(req), holdWaitMs }).catch((err: unknown) => {
      // The client checks its input first; whatever the pool still refuses is bad input too.
      throw err instanceof InvalidInputError ? new InvalidArgumentError(err.message, { cause: err }) : err;
    });
    if (r.kind === "granted") return { view: r.lease, sentAt };
    if (r.closed === true) throw new FallbackLeftError();
    if (r.unlisted === true) {
      throw new BrokerClientError(
        status.UNAVAILABLE,
        `the broker is unreachable, and this worker may not lease for ${req.domain !== "" ? req.domain : req.targetUrl} from its fallback pool: the broker had not listed it with that domain-key long enough for the other workers to know`,
      );
    }
    throw new NoProxyAvailableError("no proxy of this worker's fallback share is eligible", r.retryAfterMs);
  }

  /**
   * Hold `proxyId` locally for a broker lease whose request is still in flight as the worker
   * enters fallback (see `FallbackPool.adopt`); the local lease, or undefined.
   */
  async adopt(req: AcquireRequest, proxyId: string): Promise<LeaseView | undefined> {
    return this.pool.adopt(requestOf(req), proxyId);
  }

  async renew(lease: { id: string; fencingToken: number }, ttlMs: number): Promise<Renewed> {
    const r = await this.pool.renew(lease.id, lease.fencingToken, ttlMs);
    if (r.kind === "lost") throw new LeaseLostError(lease.id, r.reason);
    return { expireAt: r.expireAt, ttlMs: r.ttlMs };
  }

  async release(lease: { id: string; fencingToken: number }, outcome: LeaseOutcome): Promise<void> {
    const r = await this.pool.release(lease.id, lease.fencingToken, {
      kind: outcome.kind,
      httpStatus: outcome.httpStatus ?? 0,
      latencyMs: outcome.latencyMs ?? 0,
      retryAfterMs: outcome.retryAfterMs ?? 0,
    });
    if (r.kind === "lost" && r.reason !== "EXPIRED") {
      throw new BrokerClientError(status.NOT_FOUND, `fallback lease ${lease.id} is unknown`);
    }
  }
}

/** The client left fallback mode while this acquire was in the fallback pool: ask the broker. */
export class FallbackLeftError extends Error {
  override readonly name = "FallbackLeftError";
  constructor() {
    super("the client went back to the broker");
  }
}

/** The fallback pool's form of an acquire. */
function requestOf(req: AcquireRequest): FallbackAcquireRequest {
  return {
    pool: req.pool,
    host: req.targetUrl !== "" ? hostFromUrl(req.targetUrl) : hostFromDomain(req.domain),
    ttlMs: req.ttlMs,
    sessionKey: req.sessionKey,
    tier: req.tier,
    labels: req.labels,
    maxWaitMs: req.maxWaitMs,
  };
}
