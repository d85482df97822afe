import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { durationOf, leaseToWire, lostReasonOf } from "@proxybroker/sdk/wire";
import {
  DenyReason,
  LeaseDeniedSchema,
  LeaseGrantedSchema,
  LeaseLostSchema,
  LeaseWantedSchema,
} from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { LeaseDenied, LeaseGranted, LeaseLost, LeaseWanted } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { LostReasonName } from "@proxybroker/sdk/model";
import type { Decision } from "../lease/lease-engine.js";
import { BrokerError } from "./errors.js";
import type { NextAnswer } from "./lease-calls.js";

/** Building the wire answers of the lease RPCs from engine decisions and errors. */

const NO_PROXY = "no eligible proxy";

/** A decision as the stream's granted/denied message. */
export function decisionToWire(
  requestId: string,
  d: Decision,
  reusable = false,
): { case: "granted"; value: LeaseGranted } | { case: "denied"; value: LeaseDenied } {
  if (d.kind === "granted") {
    return { case: "granted", value: create(LeaseGrantedSchema, { requestId, lease: leaseToWire(d.lease, reusable) }) };
  }
  return {
    case: "denied",
    value: create(LeaseDeniedSchema, {
      requestId,
      reason: DenyReason.NO_PROXY_AVAILABLE,
      message: NO_PROXY,
      retryAfter: d.retryAfterMs >= 0 ? durationOf(d.retryAfterMs) : undefined,
    }),
  };
}

/** The answer to a release's `next` as its granted/denied message. */
export function nextToWire(
  requestId: string,
  next: NextAnswer,
  reusable = false,
): { case: "granted"; value: LeaseGranted } | { case: "denied"; value: LeaseDenied } {
  return next.kind === "refused"
    ? { case: "denied", value: errorToDenied(next.error, { requestId }) }
    : decisionToWire(requestId, next, reusable);
}

/** The unasked message asking the holder of a reusable lease to give it back. */
export function wantedToWire(leaseId: string): LeaseWanted {
  return create(LeaseWantedSchema, { leaseId });
}

/** An error as an in-band denial (the stream stays open). */
export function errorToDenied(err: unknown, ids: { requestId?: string; leaseId?: string }): LeaseDenied {
  const e = BrokerError.from(err);
  // RESOURCE_EXHAUSTED (a limit: too many waiting or in flight) is NO_PROXY_AVAILABLE in-band: the
  // caller retries after retry_after, and never takes it for a broker that cannot serve
  const reason =
    e.code === status.INVALID_ARGUMENT
      ? DenyReason.INVALID_ARGUMENT
      : e.code === status.NOT_FOUND
        ? DenyReason.NOT_FOUND
        : e.code === status.RESOURCE_EXHAUSTED
          ? DenyReason.NO_PROXY_AVAILABLE
          : DenyReason.UNAVAILABLE;
  const retry = Number(e.trailers["retry-after-ms"] ?? "");
  return create(LeaseDeniedSchema, {
    requestId: ids.requestId ?? "",
    leaseId: ids.leaseId ?? "",
    reason,
    message: e.message,
    ...(Number.isFinite(retry) && e.trailers["retry-after-ms"] !== undefined ? { retryAfter: durationOf(retry) } : {}),
  });
}

/** The in-band answer for a renew or release of a lease the caller no longer holds. */
export function lostToWire(leaseId: string, reason: LostReasonName): LeaseLost {
  return create(LeaseLostSchema, { leaseId, reason: lostReasonOf(reason) });
}

/** The unary status for a lost lease: NOT_FOUND for unknown ids, ABORTED otherwise. */
export function lostToError(leaseId: string, reason: LostReasonName): BrokerError {
  if (reason === "NOT_FOUND")
    return new BrokerError(status.NOT_FOUND, `lease ${leaseId} is unknown (never issued, released, or long expired)`);
  const why = reason === "EXPIRED" ? "has expired" : "is held under another fencing token";
  return new BrokerError(status.ABORTED, `lease ${leaseId} ${why}`, { "lost-reason": reason });
}

/** The unary status for a denied acquire: RESOURCE_EXHAUSTED with trailer `retry-after-ms`. */
export function deniedToError(d: { retryAfterMs: number }): BrokerError {
  const trailers: Record<string, string> = d.retryAfterMs >= 0 ? { "retry-after-ms": String(Math.ceil(d.retryAfterMs)) } : {};
  const hint = d.retryAfterMs >= 0 ? `; retry after ${Math.ceil(d.retryAfterMs)} ms` : "";
  return new BrokerError(status.RESOURCE_EXHAUSTED, `${NO_PROXY} within max_wait${hint}`, trailers);
}
