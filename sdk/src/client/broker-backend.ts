import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { status } from "@grpc/grpc-js";
import type { LeaseView } from "../model/model.js";
import { DenyReason, OutcomeSchema } from "../gen/proxybroker/v1/broker_pb.js";
import type { LeaseDenied } from "../gen/proxybroker/v1/broker_pb.js";
import { epochMsOf, leaseFromWire, lostReasonNameOf, msOf, outcomeKindOf } from "../wire/codec.js";
import type { BrokerBreaker } from "./breaker.js";
import { BrokerClientError, BrokerSlowError, LeaseLostError, NoProxyAvailableError } from "./errors.js";
import type { LeaseBackend, LeaseOutcome, Renewed } from "./lease.js";
import { sentWithoutAnswer } from "./lease-channel.js";
import type { Answer, LeaseChannel } from "./lease-channel.js";

/** An acquire as the SDK sends it. */
export interface AcquireRequest {
  readonly workerId: string;
  readonly pool: string;
  readonly targetUrl: string;
  readonly domain: string;
  readonly ttlMs: number;
  readonly maxWaitMs: number;
  readonly sessionKey: string;
  readonly tier: string;
  readonly labels: Readonly<Record<string, string>>;
  /** "" = any; else only this proxy (a fallback lease handed over). */
  readonly proxyId: string;
  /** Ask for a reusable lease (kept for more requests while the pair is unpaced). Default false. */
  readonly reuse?: boolean;
}

/** A grant with the monotonic moment its acquire was sent (the lease's deadline counts from it). */
export interface Granted {
  readonly view: LeaseView;
  readonly sentAt: number;
  /** The broker said it does not know the pair's pacing (`Lease.pacing_unknown`); broker grants only. */
  readonly pacingUnknown?: boolean;
}

/** The status of each denial reason (as the broker's unary calls answer it); others are UNAVAILABLE. */
const DENY_CODES: Readonly<Partial<Record<DenyReason, status>>> = {
  [DenyReason.NO_PROXY_AVAILABLE]: status.RESOURCE_EXHAUSTED,
  [DenyReason.INVALID_ARGUMENT]: status.INVALID_ARGUMENT,
  [DenyReason.UNAVAILABLE]: status.UNAVAILABLE,
  [DenyReason.NOT_FOUND]: status.NOT_FOUND,
};

/** A denial as an error (NO_PROXY_AVAILABLE → NoProxyAvailableError), marked as the broker's answer. */
export function deniedError(d: LeaseDenied): BrokerClientError {
  const code = DENY_CODES[d.reason] ?? status.UNAVAILABLE;
  const retry = d.retryAfter === undefined ? -1 : msOf(d.retryAfter);
  const err =
    code === status.RESOURCE_EXHAUSTED
      ? new NoProxyAvailableError(d.message || "no proxy available", retry)
      : new BrokerClientError(code, d.message || "denied", retry);
  err.answered = true;
  return err;
}

function unexpected(a: Answer): BrokerClientError {
  return new BrokerClientError(status.INTERNAL, `unexpected answer ${String(a.case)} from the broker`);
}

/**
 * Broker calls over the Lease stream, each through the circuit breaker: acquire, and the
 * `LeaseBackend` (renew, release) of broker leases.
 */
export class BrokerBackend implements LeaseBackend {
  constructor(
    private readonly deps: {
      channel: LeaseChannel;
      breaker: BrokerBreaker;
      callTimeoutMs: number;
      monotonic: () => number;
      /** Sent with renews: the broker counts this worker as live. */
      workerId: string;
      /** Sent with acquires: this worker keeps a fallback pool. */
      fallbackPool: boolean;
      /** Its leases' holders stop using them within `YIELD_HOLD_MS` of an outage (the agent). */
      yieldsLeases?: boolean;
      /** The connection to the broker is up (a timeout then means "slow", not "unreachable"). */
      connected: () => boolean;
      /** An acquire reached the broker but its answer did not come back: it may have been granted. */
      onUnanswered?: (requestId: string, req: AcquireRequest) => void;
    },
  ) {}

  /**
   * Acquire through the broker; rejects with a BrokerClientError (or the breaker's EOPENBREAKER).
   * A timeout while connected is a `BrokerSlowError`, which does not count against the breaker.
   * `requestId` is given to ask again for what an unanswered acquire got (see `OwedRecall`).
   */
  acquire(req: AcquireRequest, requestId = this.deps.channel.nextRequestId()): Promise<Granted> {
    return this.deps.breaker.fire(async () => {
      const sentAt = this.deps.monotonic();
      let a: Answer;
      try {
        a = await this.deps.channel.acquire(
          {
            requestId,
            workerId: req.workerId,
            pool: req.pool,
            targetUrl: req.targetUrl,
            domain: req.domain,
            sessionKey: req.sessionKey,
            tier: req.tier,
            labels: { ...req.labels },
            proxyId: req.proxyId,
            fallbackPool: this.deps.fallbackPool,
            yieldsLeases: this.deps.yieldsLeases === true,
            reuse: req.reuse === true,
            // its leases end at their deadline (lease.ts): the broker may grant it a silent
            // worker's pair for the seconds before that worker may use it
            honorsLeaseTtl: true,
            ...(req.ttlMs > 0 ? { ttl: durationFromMs(req.ttlMs) } : {}),
            ...(req.maxWaitMs > 0 ? { maxWait: durationFromMs(req.maxWaitMs) } : {}),
          },
          this.deps.callTimeoutMs + req.maxWaitMs,
        );
      } catch (err) {
        if (sentWithoutAnswer(err)) this.deps.onUnanswered?.(requestId, req);
        if (err instanceof BrokerClientError && err.code === status.DEADLINE_EXCEEDED && this.deps.connected()) {
          throw new BrokerSlowError(
            `the broker did not answer within ${this.deps.callTimeoutMs + req.maxWaitMs} ms (connected: slow, not unreachable)`,
            { cause: err },
          );
        }
        throw err;
      }
      if (a.case === "granted" && a.value.lease !== undefined)
        return { view: leaseFromWire(a.value.lease), sentAt, pacingUnknown: a.value.lease.pacingUnknown };
      if (a.case === "denied") throw deniedError(a.value);
      throw unexpected(a);
    });
  }

  // Renews and releases of broker leases go straight to the stream, never short-circuited by an
  // open breaker: a lease the broker holds must be renewed or released there whenever it answers.
  async renew(lease: { id: string; fencingToken: number }, ttlMs: number): Promise<Renewed> {
    const a = await this.deps.channel.renew(
      {
        leaseId: lease.id,
        fencingToken: BigInt(lease.fencingToken),
        ttl: durationFromMs(ttlMs),
        workerId: this.deps.workerId,
        honorsLeaseTtl: true,
      },
      this.deps.callTimeoutMs,
    );
    // an older broker says nothing of how long: the TTL asked
    if (a.case === "renewed")
      return { expireAt: epochMsOf(a.value.expireTime), ttlMs: a.value.ttl === undefined ? ttlMs : msOf(a.value.ttl) };
    if (a.case === "lost") throw new LeaseLostError(lease.id, lostReasonNameOf(a.value.reason));
    if (a.case === "denied") throw deniedError(a.value);
    throw unexpected(a);
  }

  async release(lease: { id: string; fencingToken: number }, outcome: LeaseOutcome): Promise<void> {
    const { answer } = this.deps.channel.release(
      { leaseId: lease.id, fencingToken: BigInt(lease.fencingToken), outcome: outcomeToWire(outcome) },
      this.deps.callTimeoutMs,
    );
    const a = await answer;
    if (a.case === "denied") throw deniedError(a.value);
  }
}

/** The wire form of an outcome. */
export function outcomeToWire(o: LeaseOutcome) {
  return create(OutcomeSchema, {
    kind: outcomeKindOf(o.kind),
    httpStatus: o.httpStatus ?? 0,
    ...(o.latencyMs !== undefined && o.latencyMs > 0 ? { latency: durationFromMs(o.latencyMs) } : {}),
    ...(o.retryAfterMs !== undefined && o.retryAfterMs > 0 ? { retryAfter: durationFromMs(o.retryAfterMs) } : {}),
    bytes: BigInt(Math.max(0, Math.round(o.bytes ?? 0))),
    detail: o.detail ?? "",
  });
}
