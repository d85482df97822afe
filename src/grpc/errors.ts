import { Metadata, status } from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { durationOf } from "@proxybroker/sdk/wire";
import { StatusSchema } from "@proxybroker/sdk/gen/google/rpc/status_pb";
import { ErrorInfoSchema, RetryInfoSchema } from "@proxybroker/sdk/gen/google/rpc/error_details_pb";
import type { ServiceError } from "@grpc/grpc-js";
import { InvalidInputError } from "@proxybroker/sdk/model";
import { StoreUnavailableError } from "@proxybroker/sdk/engine";
import { WaitRefusedError } from "../lease/errors.js";
import { redactSecrets } from "../security/redact.js";

/** The domain of the reasons in the ErrorInfo details (google.rpc.ErrorInfo.domain). */
export const ERROR_DOMAIN = "proxybroker.v1";

/**
 * One error type for the service layer: a gRPC status code, a message that says what is wrong
 * (passwords redacted), optional trailers, a reason (UPPER_SNAKE_CASE, sent as
 * google.rpc.ErrorInfo) and a cause. `BrokerError.from` normalises anything caught.
 */
export class BrokerError extends Error {
  override readonly name = "BrokerError";
  readonly reason: string;
  constructor(
    readonly code: status,
    message: string,
    readonly trailers: Readonly<Record<string, string>> = {},
    options?: { cause?: unknown; reason?: string },
  ) {
    // a message may quote a proxy URL or a Redis URL: never with its password; and it may quote
    // what a client sent, so it is cut short (it travels as an HTTP/2 trailer, whose size is limited)
    super(shorten(redactSecrets(message)), options?.cause === undefined ? undefined : { cause: options.cause });
    this.reason = options?.reason ?? defaultReason(code, trailers);
  }

  /** Map anything thrown inside a handler to a `BrokerError` (unknown errors → INTERNAL). */
  static from(err: unknown): BrokerError {
    if (err instanceof BrokerError) return err;
    if (err instanceof InvalidInputError) return new BrokerError(status.INVALID_ARGUMENT, err.message);
    if (err instanceof WaitRefusedError) {
      return new BrokerError(
        status.RESOURCE_EXHAUSTED,
        err.message,
        { "retry-after-ms": String(err.retryAfterMs) },
        { cause: err, reason: err.reason },
      );
    }
    if (err instanceof StoreUnavailableError) {
      return new BrokerError(status.UNAVAILABLE, `store unavailable: ${err.message}`, {}, { cause: err, reason: "STORE_UNAVAILABLE" });
    }
    const message = err instanceof Error ? err.message : String(err);
    return new BrokerError(status.INTERNAL, `internal error: ${message}`, {}, { cause: err });
  }

  /**
   * The grpc-js error object to hand a unary callback: the trailers (kept for compatibility), and
   * the standard `grpc-status-details-bin` — a google.rpc.Status with an ErrorInfo (the reason)
   * and, when the caller should wait, a RetryInfo — that any gRPC library decodes.
   */
  toServiceError(): Partial<ServiceError> {
    const metadata = new Metadata();
    for (const [k, v] of Object.entries(this.trailers)) metadata.set(k, v);
    metadata.set("grpc-status-details-bin", Buffer.from(toBinary(StatusSchema, this.statusDetails())));
    return { code: this.code, details: this.message, metadata };
  }

  private statusDetails() {
    const details = [
      anyPack(ErrorInfoSchema, create(ErrorInfoSchema, { reason: this.reason, domain: ERROR_DOMAIN, metadata: { ...this.trailers } })),
    ];
    const retry = this.trailers["retry-after-ms"];
    if (retry !== undefined && Number.isFinite(Number(retry))) {
      details.push(anyPack(RetryInfoSchema, create(RetryInfoSchema, { retryDelay: durationOf(Number(retry)) })));
    }
    return create(StatusSchema, { code: this.code, message: this.message, details });
  }
}

/** The reason of an error that names none: by its code (and a lost lease's reason). */
function defaultReason(code: status, trailers: Readonly<Record<string, string>>): string {
  switch (code) {
    case status.RESOURCE_EXHAUSTED:
      return "NO_PROXY_AVAILABLE";
    case status.ABORTED:
      return `LEASE_${trailers["lost-reason"] ?? "REVOKED"}`;
    case status.NOT_FOUND:
      return "LEASE_NOT_FOUND";
    default:
      return status[code] ?? "UNKNOWN";
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
