import { status } from "@grpc/grpc-js";

/**
 * The SDK's one error type: a gRPC status `code`, a message, and for denials the broker's
 * `retryAfterMs`. `isBrokerFailure` says which errors mean "the broker (or its Redis) cannot
 * serve", the ones that count against the circuit breaker.
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

const FAILURES = new Set<number>([status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.INTERNAL, status.UNKNOWN, status.CANCELLED]);

/** True for errors that mean the broker cannot serve (they count against the breaker). */
export function isBrokerFailure(err: unknown): boolean {
  if (err instanceof BrokerSlowError) return false;
  if (err instanceof BrokerClientError) return FAILURES.has(err.code);
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number") return FAILURES.has(err.code);
  // Anything else (connection refused surfaced as a plain error, a timeout) is a failure too.
  return true;
}

/** Normalise anything caught from a gRPC call into a BrokerClientError. */
export function toClientError(err: unknown): BrokerClientError {
  if (err instanceof BrokerClientError) return err;
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number" && err.code in status) {
    const details = "details" in err && typeof err.details === "string" ? err.details : String(err);
    return new BrokerClientError(err.code as status, details, -1, { cause: err });
  }
  return new BrokerClientError(status.UNAVAILABLE, err instanceof Error ? err.message : String(err), -1, { cause: err });
}
