import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import type { ServerDuplexStream } from "@grpc/grpc-js";
import { timestampOf } from "@proxybroker/sdk/wire";
import {
  LeaseReleasedSchema,
  LeaseRenewedSchema,
  LeaseResponseSchema,
} from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { LeaseDenied, LeaseRequest, LeaseResponse } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { decisionToWire, errorToDenied, lostToWire } from "./answers.js";
import type { BrokerContext } from "./context.js";
import { BrokerError } from "./errors.js";
import { callerName } from "../security/auth.js";
import { recordGrant } from "./grant-hub.js";
import { checkAcquire, checkRelease, checkRenew, type ReleaseSpec } from "./validate.js";

type Call = ServerDuplexStream<LeaseRequest, LeaseResponse>;
type Body = LeaseResponse["kind"];

/** An open Lease stream, as the shutdown sequence sees it. */
export interface StreamHandle {
  /** Requests received and not answered yet. */
  inFlight(): number;
  /** End the stream with UNAVAILABLE (shutdown). */
  close(message: string): void;
}

/**
 * The Lease stream: many acquires, renews and releases multiplexed on one stream, each answered
 * in-band as soon as it is decided (answers may come out of order: they carry request_id or
 * lease_id). Errors never end the stream. A closed or broken stream ends nothing but its waiting
 * acquires: its leases live on until released, renewed elsewhere, or expired (G3).
 */
export function leaseStream(ctx: BrokerContext): (call: Call) => void {
  return (call) => {
    const abort = new AbortController();
    let pending = 0;
    let halfClosed = false;
    const handle: StreamHandle = {
      inFlight: () => pending,
      close: (message) => {
        if (!call.destroyed) call.emit("error", { code: status.UNAVAILABLE, details: message });
      },
    };
    ctx.streams.add(handle);
    ctx.metrics.openStreams.inc();

    // An answer the stream can no longer carry: a lease in it would be held by nobody, so it is
    // given back at once rather than left to expire.
    // Backpressure: while the client does not read its answers, its requests are not read either.
    let paused = false;
    const send = (answer: Body | Body[]) => {
      for (const kind of Array.isArray(answer) ? answer : [answer]) {
        if (call.destroyed || !call.writable) {
          giveBack(ctx, kind);
          continue;
        }
        if (!call.write(create(LeaseResponseSchema, { kind })) && !paused) {
          paused = true;
          call.pause();
          call.once("drain", () => {
            paused = false;
            call.resume();
          });
        }
      }
    };
    const finishIfDone = () => {
      if (halfClosed && pending === 0 && !call.destroyed && call.writable) call.end();
    };
    const limit = ctx.limits.maxInFlightPerStream;
    const run = (work: () => Promise<Body | Body[]>, onError: (err: unknown) => Body) => {
      if (pending >= limit) {
        send(onError(new BrokerError(status.RESOURCE_EXHAUSTED, `${limit} requests already wait for their answers on this stream (MAX_IN_FLIGHT_PER_STREAM): not taken`, { "retry-after-ms": "100" }, { reason: "TOO_MANY_IN_FLIGHT" })));
        return;
      }
      pending++;
      work()
        .catch(onError)
        .then(send)
        .catch(() => undefined)
        .finally(() => {
          pending--;
          finishIfDone();
        });
    };

    const caller = callerName(call);
    call.on("data", (req: LeaseRequest) => dispatch(ctx, req, { signal: abort.signal, caller }, run));
    call.on("end", () => {
      halfClosed = true;
      finishIfDone();
    });
    call.on("error", () => undefined);
    call.once("close", () => {
      abort.abort(new BrokerError(status.CANCELLED, "stream closed"));
      ctx.streams.delete(handle);
      ctx.metrics.openStreams.dec();
    });
  };
}

function dispatch(
  ctx: BrokerContext,
  req: LeaseRequest,
  { signal, caller }: { readonly signal: AbortSignal; readonly caller: string },
  run: (work: () => Promise<Body | Body[]>, onError: (err: unknown) => Body) => void,
): void {
  const m = req.kind;
  switch (m.case) {
    case "acquire": {
      const requestId = m.value.requestId;
      const started = ctx.clock();
      run(
        async () => {
          if (ctx.isDraining()) throw new BrokerError(status.UNAVAILABLE, "broker is shutting down", {}, { reason: "DRAINING" });
          if (requestId === "") throw new BrokerError(status.INVALID_ARGUMENT, "request_id is required on the Lease stream: the answer is matched by it");
          const spec = checkAcquire(m.value, ctx.limits, caller);
          const d = await ctx.engine.acquire(spec, signal);
          ctx.metrics.acquireSeconds.observe((ctx.clock() - started) / 1000);
          if (d.kind === "granted") recordGrant(ctx, d.lease, caller, spec.workerId);
          else ctx.metrics.denied(spec.pool, "NO_PROXY_AVAILABLE");
          ctx.debugLog?.debug(
            { requestId, worker: spec.workerId, pool: spec.pool, host: spec.host, granted: d.kind === "granted", proxy: d.kind === "granted" ? d.lease.proxy.id : "" },
            "acquire",
          );
          return decisionToWire(requestId, d);
        },
        (err) => deniedAnswer(ctx, err, { requestId }, m.value.pool),
      );
      return;
    }
    case "renew": {
      const leaseId = m.value.leaseId;
      run(
        async () => {
          const spec = checkRenew(m.value, ctx.limits);
          const r = await ctx.engine.renew(spec);
          ctx.debugLog?.debug({ leaseId, renewed: r.kind !== "lost", ...(r.kind === "lost" ? { reason: r.reason } : {}) }, "renew");
          if (r.kind === "lost") {
            ctx.metrics.lost.inc({ reason: r.reason });
            return { case: "lost", value: lostToWire(leaseId, r.reason) };
          }
          ctx.metrics.renewals.inc();
          return { case: "renewed", value: create(LeaseRenewedSchema, { leaseId, expireTime: timestampOf(r.expireAt) }) };
        },
        (err) => deniedAnswer(ctx, err, { leaseId }),
      );
      return;
    }
    case "release": {
      const leaseId = m.value.leaseId;
      run(
        async () => {
          const checked = checkRelease(m.value, ctx.limits, caller);
          if (checked.next !== undefined && checked.next.requestId === "") {
            throw new BrokerError(status.INVALID_ARGUMENT, "next.request_id is required on the Lease stream: the next answer is matched by it");
          }
          // draining: release, but grant nothing new
          const nextRequest = checked.next;
          const draining = ctx.isDraining() && nextRequest !== undefined;
          const spec: ReleaseSpec = draining ? { leaseId: checked.leaseId, fencingToken: checked.fencingToken, outcome: checked.outcome } : checked;
          const r = await ctx.engine.release(spec, signal);
          const next =
            draining && nextRequest !== undefined
              ? drainingDenied(nextRequest.requestId)
              : r.next === undefined
                ? undefined
                : decisionToWire(nextRequest?.requestId ?? "", r.next);
          if (r.next?.kind === "granted") recordGrant(ctx, r.next.lease, caller, checked.next?.workerId ?? "");
          else if (r.next?.kind === "denied") ctx.metrics.denied(checked.next?.pool ?? "", "NO_PROXY_AVAILABLE");
          ctx.debugLog?.debug(
            {
              leaseId,
              outcome: spec.outcome.kind,
              released: r.kind !== "lost",
              ...(nextRequest === undefined ? {} : { nextRequestId: nextRequest.requestId, nextGranted: r.next?.kind === "granted" }),
            },
            "release",
          );
          if (r.kind === "lost") {
            // Lost, then the next lease's own answer (correlated by its request_id).
            ctx.metrics.lost.inc({ reason: r.reason ?? "NOT_FOUND" });
            const lost: Body = { case: "lost", value: lostToWire(leaseId, r.reason ?? "NOT_FOUND") };
            return next === undefined ? lost : [lost, next];
          }
          ctx.metrics.releases.inc({ outcome: spec.outcome.kind });
          ctx.counts.outcomes.add("", spec.outcome.kind, ctx.clock());
          return { case: "released", value: create(LeaseReleasedSchema, { leaseId, next: next ?? { case: undefined } }) };
        },
        (err) => deniedAnswer(ctx, err, { leaseId }),
      );
      return;
    }
    case undefined:
      run(
        () => Promise.reject(new BrokerError(status.INVALID_ARGUMENT, "LeaseRequest has none of acquire, renew, release")),
        (err) => deniedAnswer(ctx, err, {}),
      );
      return;
  }
}

/** The in-band answer to a failed request; `acquirePool` set: it was an acquire, counted as a denial. */
function deniedAnswer(ctx: BrokerContext, err: unknown, ids: { requestId?: string; leaseId?: string }, acquirePool?: string): Body {
  const e = BrokerError.from(err);
  if (e.code === status.UNAVAILABLE) ctx.metrics.storeErrors.inc();
  if (acquirePool !== undefined) ctx.metrics.denied(acquirePool, e.reason);
  return { case: "denied", value: errorToDenied(e, ids) };
}

/** The answer to a `next` that a draining broker does not grant. */
function drainingDenied(requestId: string): { case: "denied"; value: LeaseDenied } {
  return { case: "denied", value: errorToDenied(new BrokerError(status.UNAVAILABLE, "broker is shutting down", {}, { reason: "DRAINING" }), { requestId }) };
}

/** Give back a lease in an answer nobody can receive (ABANDONED: it was never used). */
function giveBack(ctx: BrokerContext, kind: Body): void {
  const lease =
    kind.case === "granted" ? kind.value.lease : kind.case === "released" && kind.value.next.case === "granted" ? kind.value.next.value.lease : undefined;
  if (lease === undefined) return;
  ctx.engine
    .release({
      leaseId: lease.leaseId,
      fencingToken: Number(lease.fencingToken),
      outcome: { kind: "ABANDONED", httpStatus: 0, latencyMs: 0, retryAfterMs: 0 },
    })
    .catch(() => undefined);
}
