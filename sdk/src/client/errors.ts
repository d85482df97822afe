import { status } from "@grpc/grpc-js";
import type { LostReasonName } from "../model/model.js";

/**
 * The SDK's errors. Every error the client gives a worker (a rejected `acquire`, `renew` or
 * `release`, a throwing constructor, a lease's `signal.reason`) is a `BrokerClientError` or one of
 * its subclasses below, and its `code` is always a gRPC status (`@grpc/grpc-js` `status`):
 *
 * | class                   | code                         | when                                              |
 * | ----------------------- | ---------------------------- | ------------------------------------------------- |
 * | `NoProxyAvailableError` | RESOURCE_EXHAUSTED           | nothing eligible within `maxWaitMs`               |
 * | `BrokerSlowError`       | DEADLINE_EXCEEDED            | connected, but the broker did not answer in time  |
 * | `LeaseLostError`        | ABORTED, or NOT_FOUND        | a held lease ended without its holder releasing it |
 * | `InvalidArgumentError`  | INVALID_ARGUMENT             | a bad option or argument, found before sending    |
 * | `ClientClosedError`     | FAILED_PRECONDITION          | a call on a client after `close()`                |
 * | `BrokerClientError`     | any other (UNAVAILABLE, …)   | the broker's refusal, or a transport failure      |
 *
 * `isBrokerFailure` says which errors mean "the broker (or its Redis) cannot serve", the ones that
 * count against the circuit breaker.
 */

/**
 * The SDK's base error: a gRPC status `code`, a message, and for denials the broker's
 * `retryAfterMs` (-1 when it gave none).
 */
export class BrokerClientError extends Error {
  override readonly name: string = "BrokerClientError";
  /** The broker itself gave this answer (in-band), as opposed to a transport failure. */
  answered = false;
  constructor(
    readonly code: status,
    message: string,
    readonly retryAfterMs = -1,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** No proxy became eligible within max_wait (RESOURCE_EXHAUSTED); `retryAfterMs` says when to retry. */
export class NoProxyAvailableError extends BrokerClientError {
  override readonly name: string = "NoProxyAvailableError";
  constructor(message: string, retryAfterMs: number) {
    super(status.RESOURCE_EXHAUSTED, message, retryAfterMs);
  }
}

/**
 * A broker call that ran out of time while the connection to the broker was up: the broker is
 * slow, not unreachable. It never opens the breaker (fallback is for an unreachable broker only).
 */
export class BrokerSlowError extends BrokerClientError {
  override readonly name: string = "BrokerSlowError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(status.DEADLINE_EXCEEDED, message, -1, options);
  }
}

/**
 * A bad option of `ProxyBrokerClient` or a bad argument of a call (a target that is no URL or
 * host, a negative `maxWaitMs`), found by the SDK before anything was sent: INVALID_ARGUMENT, as
 * the broker answers the same mistake. The message names the option or argument.
 */
export class InvalidArgumentError extends BrokerClientError {
  override readonly name: string = "InvalidArgumentError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(status.INVALID_ARGUMENT, message, -1, options);
  }
}

/** A call (`acquire`, `withLease`, `fetch`) on a client after its `close()`: FAILED_PRECONDITION. */
export class ClientClosedError extends BrokerClientError {
  override readonly name: string = "ClientClosedError";
  constructor(message = "the client is closed") {
    super(status.FAILED_PRECONDITION, message);
  }
}

/** Why a lease ended before its holder released it (`LeaseLostError.reason`). */
export type LeaseLostReason = LostReasonName;

/**
 * A held lease was lost: the reason of `lease.signal` when it aborts, and the rejection of a
 * `renew` of a lost lease. `code` is ABORTED (EXPIRED, REVOKED) or NOT_FOUND (NOT_FOUND), as the
 * broker's unary calls answer (docs/spec.md §5). It never counts against the breaker.
 */
export class LeaseLostError extends BrokerClientError {
  override readonly name: string = "LeaseLostError";
  constructor(
    readonly leaseId: string,
    /**
     * EXPIRED, REVOKED or NOT_FOUND from the broker; EXPIRED too when no renewal was confirmed
     * before the lease's local deadline; REVOKED when the broker, back after an outage, gave the
     * proxy of a fallback lease to another worker, or when entering fallback gave up a broker
     * lease whose proxy another worker's fallback share owns.
     */
    readonly reason: LeaseLostReason,
  ) {
    super(reason === "NOT_FOUND" ? status.NOT_FOUND : status.ABORTED, `lease ${leaseId} lost: ${reason}`);
  }
}

const FAILURES = new Set<number>([status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.INTERNAL, status.UNKNOWN, status.CANCELLED]);

/** True for errors that mean the broker cannot serve (they count against the breaker). */
export function isBrokerFailure(err: unknown): boolean {
  if (err instanceof BrokerSlowError) return false;
  if (err instanceof BrokerClientError) return FAILURES.has(err.code);
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number") return FAILURES.has(err.code);
  // Anything else (connection refused surfaced as a plain error, a timeout) is a failure too.
  return true;
}
