import { Metadata, status } from "@grpc/grpc-js";
import type { ServiceError } from "@grpc/grpc-js";
import { InvalidInputError } from "@proxybroker/sdk/model";
import { StoreUnavailableError } from "@proxybroker/sdk/engine";
import { redactSecrets } from "../security/redact.js";

/**
 * One error type for the service layer: a gRPC status code, a message that says what is wrong
 * (passwords redacted), optional trailers, and a cause. `BrokerError.from` normalises anything caught.
 */
export class BrokerError extends Error {
  override readonly name = "BrokerError";
  constructor(
    readonly code: status,
    message: string,
    readonly trailers: Readonly<Record<string, string>> = {},
    options?: { cause?: unknown },
  ) {
    // a message may quote a proxy URL or a Redis URL: never with its password; and it may quote
    // what a client sent, so it is cut short (it travels as an HTTP/2 trailer, whose size is limited)
    super(shorten(redactSecrets(message)), options);
  }

  /** Map anything thrown inside a handler to a `BrokerError` (unknown errors → INTERNAL). */
  static from(err: unknown): BrokerError {
    if (err instanceof BrokerError) return err;
    if (err instanceof InvalidInputError) return new BrokerError(status.INVALID_ARGUMENT, err.message);
    if (err instanceof StoreUnavailableError) {
      return new BrokerError(status.UNAVAILABLE, `store unavailable: ${err.message}`, {}, { cause: err });
    }
    const message = err instanceof Error ? err.message : String(err);
    return new BrokerError(status.INTERNAL, `internal error: ${message}`, {}, { cause: err });
  }

  /** The grpc-js error object to hand a unary callback. */
  toServiceError(): Partial<ServiceError> {
    const metadata = new Metadata();
    for (const [k, v] of Object.entries(this.trailers)) metadata.set(k, v);
    return { code: this.code, details: this.message, metadata };
  }
}

/** The longest message an error carries (characters; a longer one is cut, with "…"). */
export const MAX_MESSAGE_LENGTH = 512;

function shorten(message: string): string {
  return message.length <= MAX_MESSAGE_LENGTH ? message : `${message.slice(0, MAX_MESSAGE_LENGTH - 1)}…`;
}

/** Shorthand for INVALID_ARGUMENT. */
export function invalidArgument(message: string): BrokerError {
  return new BrokerError(status.INVALID_ARGUMENT, message);
}
