/**
 * The engine's own refusals. The engine knows nothing of gRPC: the surface maps each error to its
 * status (src/grpc/errors.ts, `BrokerError.from`).
 */

/** An acquire that could not join a wait queue; `retryAfterMs` says when to try again. */
export class WaitRefusedError extends Error {
  override readonly name = "WaitRefusedError";
  /** The reason as the broker names it (metrics, google.rpc.ErrorInfo). */
  readonly reason = "TOO_MANY_WAITING";
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}
