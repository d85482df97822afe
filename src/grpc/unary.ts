import type { ServerUnaryCall, sendUnaryData } from "@grpc/grpc-js";
import { status } from "@grpc/grpc-js";
import { BrokerError } from "./errors.js";
import { draining } from "./lease-calls.js";

type Handler<Req, Res> = (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void;
type Implementation<Req, Res> = (request: Req, signal: AbortSignal, call: ServerUnaryCall<Req, Res>) => Promise<Res>;

/**
 * Wrap an async unary implementation as a grpc-js handler: every error becomes a status (never an
 * unhandled rejection), and the call's cancellation is an AbortSignal. A draining broker's refusal
 * is the implementation's own business (the lease calls book it, lease-calls.ts).
 */
export function unaryCall<Req, Res>(fn: Implementation<Req, Res>): Handler<Req, Res> {
  return (call, callback) => {
    const abort = new AbortController();
    call.once("cancelled", () => abort.abort(new BrokerError(status.CANCELLED, "call cancelled")));
    fn(call.request, abort.signal, call).then(
      (res) => callback(null, res),
      (err: unknown) => callback(BrokerError.from(err).toServiceError()),
    );
  };
}

/** `unaryCall` that answers UNAVAILABLE (DRAINING) at once while the broker shuts down. */
export function unary<Req, Res>(isDraining: () => boolean, fn: Implementation<Req, Res>): Handler<Req, Res> {
  const handler = unaryCall(fn);
  return (call, callback) => {
    if (isDraining()) callback(draining().toServiceError());
    else handler(call, callback);
  };
}
