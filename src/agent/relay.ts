import * as grpc from "@grpc/grpc-js";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { methodPath } from "@proxybroker/sdk/wire";

/**
 * Calls the agent passes to the broker as they are: the caller's credentials (its
 * `authorization`), else the agent's own token; the messages as bytes, never decoded, so that a
 * tool that works against a broker works against an agent.
 */

/** The metadata of a relayed call: the caller's `authorization`, else the agent's token. */
export function relayMetadata(from: grpc.Metadata, token: string | undefined): grpc.Metadata {
  const md = new grpc.Metadata();
  const auth = from.get("authorization");
  if (auth.length > 0) for (const v of auth) md.add("authorization", v);
  else if (token !== undefined) md.set("authorization", `Bearer ${token}`);
  return md;
}

const bytes = (b: Buffer): Buffer => b;

/** Serve every method of `service` by relaying it to `broker` (unary and server-streaming). */
export function addRelayedService<S extends GenServiceMethods>(
  server: grpc.Server,
  service: GenService<S>,
  o: { readonly broker: grpc.Client; readonly token?: string },
): void {
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const method of service.methods) {
    const path = methodPath(method);
    const streaming = method.methodKind === "server_streaming";
    if (method.methodKind !== "unary" && !streaming) continue;
    definition[method.localName] = {
      path,
      requestStream: false,
      responseStream: streaming,
      requestSerialize: bytes,
      requestDeserialize: bytes,
      responseSerialize: bytes,
      responseDeserialize: bytes,
      originalName: method.localName,
    };
    handlers[method.localName] = streaming
      ? (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
          const upstream = o.broker.makeServerStreamRequest(path, bytes, bytes, call.request, relayMetadata(call.metadata, o.token), {});
          upstream.on("data", (b: Buffer) => call.write(b));
          upstream.on("end", () => call.end());
          upstream.on("error", (err: grpc.ServiceError) => call.destroy(err));
          call.on("cancelled", () => upstream.cancel());
        }
      : (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
          const upstream = o.broker.makeUnaryRequest(
            path,
            bytes,
            bytes,
            call.request,
            relayMetadata(call.metadata, o.token),
            {},
            (err, res) => (err ? callback(err) : callback(null, res)),
          );
          call.on("cancelled", () => upstream.cancel());
        };
  }
  server.addService(definition, handlers);
}
