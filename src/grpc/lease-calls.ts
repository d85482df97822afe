/**
 * The one lease path. Acquire, renew and release (with and without `next`) come here from both
 * gRPC surfaces — the unary methods (broker-service.ts) and the Lease stream (lease-stream.ts) —
 * and are checked, run on the engine and booked here: metrics, grant records (per-minute counts,
 * WatchEvents), the reason of every denial, and a debug line per call. A surface only turns the
 * answer into its own shape: a status, or an in-band message.
 */
import { status } from "@grpc/grpc-js";
import type { AcquireLeaseRequest, ReleaseLeaseRequest, RenewLeaseRequest } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { LostReasonName, RenewResult } from "@proxybroker/sdk/model";
import type { Decision } from "../lease/lease-engine.js";
import type { AcquireSpec, ReleaseSpec } from "../lease/specs.js";
import { recordGrant } from "../observe/grant-hub.js";
import type { BrokerContext } from "./context.js";
import { BrokerError } from "./errors.js";
import { checkAcquire, checkRelease, checkRenew } from "./validate.js";

/** Which surface a call came through (the debug lines say it). */
export type Surface = "unary" | "stream";

/** Who calls, and through which surface. */
export interface CallOptions {
  readonly surface: Surface;
  /** The name of the caller's token ("" = none). */
  readonly caller: string;
  /** Ends a wait: the call or the stream went away. */
  readonly signal?: AbortSignal;
}

/** The answer to a release's `next`: an engine decision, or a refusal (the broker is draining). */
export type NextAnswer = Decision | { readonly kind: "refused"; readonly error: BrokerError };

/** How a release ended, and the answer to its `next` when it carried one. */
export interface ReleaseAnswer {
  readonly kind: "released" | "lost";
  /** Why it was lost (undefined when released). */
  readonly reason: LostReasonName | undefined;
  /** The answer to `next` (undefined without one). */
  readonly next: NextAnswer | undefined;
  /** The request id of `next` ("" without one). */
  readonly nextRequestId: string;
}

/** An outcome for a lease that was never used. */
const UNUSED = { kind: "ABANDONED", httpStatus: 0, latencyMs: 0, retryAfterMs: 0 } as const;

/** The reason the store gives when it cannot be reached (see `BrokerError.from`). */
const STORE_UNAVAILABLE = "STORE_UNAVAILABLE";

export class LeaseCalls {
  constructor(private readonly ctx: BrokerContext) {}

  /**
   * Acquire, waiting up to the request's max_wait. Throws a `BrokerError` (bad input, draining,
   * store away, too many waiting), already counted as a denial of the request's pool.
   */
  async acquire(req: AcquireLeaseRequest, opts: CallOptions): Promise<Decision> {
    const { ctx } = this;
    const started = ctx.clock();
    let spec: AcquireSpec;
    let d: Decision;
    try {
      if (ctx.isDraining()) throw draining();
      // on the stream, the answer is matched to its request by request_id
      if (opts.surface === "stream" && req.requestId === "") {
        throw new BrokerError(status.INVALID_ARGUMENT, "request_id is required on the Lease stream: the answer is matched by it");
      }
      spec = checkAcquire(req, ctx.limits, opts.caller);
      // a retry with the same (worker_id, request_id) gets the same lease from the store
      d = await ctx.engine.acquire(spec, opts.signal);
    } catch (err) {
      throw this.refuse("acquire", req.pool, err);
    }
    ctx.metrics.acquireSeconds.observe((ctx.clock() - started) / 1000);
    this.decided(spec, d, opts.caller);
    ctx.debugLog?.debug(
      {
        via: opts.surface,
        requestId: spec.requestId,
        worker: spec.workerId,
        pool: spec.pool,
        host: spec.host,
        granted: d.kind === "granted",
        proxy: d.kind === "granted" ? d.lease.proxy.id : "",
        ...(spec.proxyId === "" ? {} : { asked: spec.proxyId }),
        ...(d.kind === "granted" ? {} : { retryAfterMs: d.retryAfterMs }),
      },
      "acquire",
    );
    return d;
  }

  /** Renew (heartbeat). A lease no longer held is answered `lost`; errors throw a `BrokerError`. */
  async renew(req: RenewLeaseRequest, opts: CallOptions): Promise<RenewResult> {
    const { ctx } = this;
    let r: RenewResult;
    try {
      r = await ctx.engine.renew(checkRenew(req, ctx.limits));
    } catch (err) {
      throw this.refuse("renew", "", err);
    }
    if (r.kind === "lost") ctx.metrics.lost.inc({ reason: r.reason });
    else ctx.metrics.renewals.inc();
    ctx.debugLog?.debug(
      { via: opts.surface, leaseId: req.leaseId, renewed: r.kind !== "lost", ...(r.kind === "lost" ? { reason: r.reason } : {}) },
      "renew",
    );
    return r;
  }

  /**
   * Release with an outcome and, with `next`, acquire the next lease in the same store step when
   * fair. A draining broker releases but refuses `next`. Errors throw a `BrokerError`.
   */
  async release(req: ReleaseLeaseRequest, opts: CallOptions): Promise<ReleaseAnswer> {
    const { ctx } = this;
    let checked: ReleaseSpec;
    let refusedNext: BrokerError | undefined;
    let r: { readonly kind: "released" | "lost"; readonly reason?: LostReasonName; readonly next?: Decision };
    try {
      checked = checkRelease(req, ctx.limits, opts.caller);
      if (opts.surface === "stream" && checked.next !== undefined && checked.next.requestId === "") {
        throw new BrokerError(status.INVALID_ARGUMENT, "next.request_id is required on the Lease stream: the next answer is matched by it");
      }
      // draining: release, but grant nothing new
      refusedNext = checked.next !== undefined && ctx.isDraining() ? draining() : undefined;
      const spec: ReleaseSpec =
        refusedNext === undefined ? checked : { leaseId: checked.leaseId, fencingToken: checked.fencingToken, outcome: checked.outcome };
      r = await ctx.engine.release(spec, opts.signal);
    } catch (err) {
      throw this.refuse("release", "", err);
    }
    const nextSpec = checked.next;
    let next: NextAnswer | undefined = r.next;
    if (nextSpec !== undefined && refusedNext !== undefined) {
      ctx.metrics.denied(nextSpec.pool, refusedNext.reason);
      next = { kind: "refused", error: refusedNext };
    } else if (nextSpec !== undefined && r.next !== undefined) {
      this.decided(nextSpec, r.next, opts.caller);
    }
    if (r.kind === "lost") ctx.metrics.lost.inc({ reason: r.reason ?? "NOT_FOUND" });
    else {
      ctx.metrics.releases.inc({ outcome: checked.outcome.kind });
      ctx.counts.outcomes.add("", checked.outcome.kind, ctx.clock());
    }
    ctx.debugLog?.debug(
      {
        via: opts.surface,
        leaseId: checked.leaseId,
        outcome: checked.outcome.kind,
        released: r.kind !== "lost",
        ...(nextSpec === undefined ? {} : { nextRequestId: nextSpec.requestId, nextGranted: next?.kind === "granted" }),
      },
      "release",
    );
    return { kind: r.kind, reason: r.reason, next, nextRequestId: nextSpec?.requestId ?? "" };
  }

  /**
   * Book a call the surface or the engine refused, as the `BrokerError` to answer with: an
   * acquire counts as a denial of `pool` with the error's reason; a store that cannot be reached
   * is counted for every kind of call.
   */
  refuse(kind: "acquire" | "renew" | "release", pool: string, err: unknown): BrokerError {
    const e = BrokerError.from(err);
    if (e.reason === STORE_UNAVAILABLE) this.ctx.metrics.storeErrors.inc();
    if (kind === "acquire") this.ctx.metrics.denied(pool, e.reason);
    return e;
  }

  /** Give back a lease nobody will use (its answer could not be delivered): released ABANDONED. */
  giveBack(lease: { readonly leaseId: string; readonly fencingToken: number }): void {
    this.ctx.engine.release({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: UNUSED }).catch(() => undefined);
  }

  /** Book an acquire's decision: a grant is recorded, a denial counted. */
  private decided(spec: AcquireSpec, d: Decision, caller: string): void {
    if (d.kind === "granted") recordGrant(this.ctx, d.lease, caller, spec.workerId);
    else this.ctx.metrics.denied(spec.pool, "NO_PROXY_AVAILABLE");
  }
}

/** The refusal of new work by a broker that is shutting down. */
export function draining(): BrokerError {
  return new BrokerError(status.UNAVAILABLE, "broker is shutting down", {}, { reason: "DRAINING" });
}
