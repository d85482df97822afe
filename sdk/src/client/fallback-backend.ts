import { status } from "@grpc/grpc-js";
import type { LeaseView } from "../model/model.js";
import type { FallbackPool } from "../fallback/index.js";
import { BrokerClientError, NoProxyAvailableError } from "./errors.js";
import type { LeaseBackend, LeaseOutcome } from "./lease.js";
import { LeaseLostError } from "./lease.js";
import type { AcquireRequest } from "./broker-backend.js";
import { hostFromDomain, hostFromUrl } from "../model/domain-key.js";

/** Leases from this worker's local fallback pool, with the `LeaseBackend` of fallback leases. */
export class FallbackBackend implements LeaseBackend {
  constructor(private readonly pool: FallbackPool) {}

  get available(): boolean {
    return this.pool.hasPool;
  }

  async acquire(req: AcquireRequest): Promise<LeaseView> {
    const host = req.targetUrl !== "" ? hostFromUrl(req.targetUrl) : hostFromDomain(req.domain);
    const r = await this.pool.acquire({
      pool: req.pool,
      host,
      ttlMs: req.ttlMs,
      sessionKey: req.sessionKey,
      tier: req.tier,
      labels: req.labels,
      maxWaitMs: req.maxWaitMs,
    });
    if (r.kind === "granted") return r.lease;
    throw new NoProxyAvailableError("no proxy of this worker's fallback share is eligible", r.retryAfterMs);
  }

  async renew(lease: { id: string; fencingToken: number }, ttlMs: number): Promise<number> {
    const r = await this.pool.renew(lease.id, lease.fencingToken, ttlMs);
    if (r.kind === "lost") throw new LeaseLostError(lease.id, r.reason);
    return r.expireAt;
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
