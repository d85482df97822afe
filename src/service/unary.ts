import type { ServerUnaryCall, sendUnaryData } from "@grpc/grpc-js";
import { status } from "@grpc/grpc-js";
import { BrokerError } from "./errors.js";

/**
 * Wrap an async unary implementation as a grpc-js handler: every error becomes a status (never an
 * unhandled rejection), and the call's cancellation is an AbortSignal.
 */
export function unary<Req, Res>(
  isDraining: () => boolean,
  fn: (request: Req, signal: AbortSignal, call: ServerUnaryCall<Req, Res>) => Promise<Res>,
): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
  return (call, callback) => {
    if (isDraining()) {
      callback(new BrokerError(status.UNAVAILABLE, "broker is shutting down", {}, { reason: "DRAINING" }).toServiceError());
      return;
    }
    const abort = new AbortController();
    call.once("cancelled", () => abort.abort(new BrokerError(status.CANCELLED, "call cancelled")));
    fn(call.request, abort.signal, call).then(
      (res) => callback(null, res),
      (err: unknown) => callback(BrokerError.from(err).toServiceError()),
    );
  };
}
