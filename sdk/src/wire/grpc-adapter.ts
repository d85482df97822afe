import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { DescMessage, DescMethod, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";

/**
 * Bridge between protobuf-es v2 service descriptors and grpc-js: a `ServiceDefinition` for the
 * server, typed handler maps, and a typed client. Messages are (de)serialized with protobuf-es.
 */

type MethodShape = GenServiceMethods[string];
type In<M extends MethodShape> = MessageShape<M["input"]>;
type Out<M extends MethodShape> = MessageShape<M["output"]>;

/** The grpc-js handler type for one method, chosen by its kind. */
export type HandlerFor<M extends MethodShape> = M["methodKind"] extends "unary"
  ? grpc.handleUnaryCall<In<M>, Out<M>>
  : M["methodKind"] extends "server_streaming"
    ? grpc.handleServerStreamingCall<In<M>, Out<M>>
    : M["methodKind"] extends "client_streaming"
      ? grpc.handleClientStreamingCall<In<M>, Out<M>>
      : grpc.handleBidiStreamingCall<In<M>, Out<M>>;

/** One handler per method of the service, keyed by the method's local (camelCase) name. */
export type ServiceHandlers<S extends GenServiceMethods> = { [K in keyof S]: HandlerFor<S[K]> };

function serializer<D extends DescMessage>(schema: D): (msg: MessageShape<D>) => Buffer {
  return (msg) => {
    const bytes = toBinary(schema, msg);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializer<D extends DescMessage>(schema: D): (buf: Buffer) => MessageShape<D> {
  return (buf) => fromBinary(schema, buf);
}

/** The HTTP/2 path of a method: `/<package>.<Service>/<Method>` (proto names). */
export function methodPath(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

function methodDefinition(method: DescMethod): grpc.MethodDefinition<unknown, unknown> {
  const kind = method.methodKind;
  return {
    path: methodPath(method),
    requestStream: kind === "client_streaming" || kind === "bidi_streaming",
    responseStream: kind === "server_streaming" || kind === "bidi_streaming",
    requestSerialize: serializer(method.input) as (v: unknown) => Buffer,
    requestDeserialize: deserializer(method.input),
    responseSerialize: serializer(method.output) as (v: unknown) => Buffer,
    responseDeserialize: deserializer(method.output),
    originalName: method.localName,
  };
}

/** A grpc-js `ServiceDefinition` for a protobuf-es service, keyed by local method names. */
export function serviceDefinition<S extends GenServiceMethods>(service: GenService<S>): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) def[method.localName] = methodDefinition(method);
  return def;
}

/** Register typed handlers for a protobuf-es service on a grpc-js server. */
export function addService<S extends GenServiceMethods>(server: grpc.Server, service: GenService<S>, handlers: ServiceHandlers<S>): void {
  server.addService(serviceDefinition(service), handlers as unknown as grpc.UntypedServiceImplementation);
}

/** Per-call options of the typed client. */
export interface CallOptions {
  /** Absolute deadline or milliseconds from now. */
  readonly deadline?: Date | number;
  readonly metadata?: grpc.Metadata;
}

/** The typed client method for one method kind (client streaming is not used by our services). */
export type ClientMethodFor<M extends MethodShape> = M["methodKind"] extends "unary"
  ? (request: MessageInitShape<M["input"]>, options?: CallOptions) => Promise<Out<M>>
  : M["methodKind"] extends "bidi_streaming"
    ? (options?: CallOptions) => grpc.ClientDuplexStream<In<M>, Out<M>>
    : M["methodKind"] extends "server_streaming"
      ? (request: MessageInitShape<M["input"]>, options?: CallOptions) => grpc.ClientReadableStream<Out<M>>
      : never;

/** A typed client: one method per RPC, plus the underlying grpc-js client. */
export type TypedClient<S extends GenServiceMethods> = { [K in keyof S]: ClientMethodFor<S[K]> } & {
  readonly grpcClient: grpc.Client;
};

function deadlineOf(options: CallOptions | undefined): grpc.CallOptions {
  if (options?.deadline === undefined) return {};
  const d = options.deadline;
  return { deadline: typeof d === "number" ? new Date(Date.now() + d) : d };
}

/** Create a typed client for a protobuf-es service; share one `grpc.Client` between services. */
export function createClient<S extends GenServiceMethods>(service: GenService<S>, client: grpc.Client): TypedClient<S> {
  const out: Record<string, unknown> = { grpcClient: client };
  for (const method of service.methods) {
    const path = methodPath(method);
    const ser = serializer(method.input);
    const de = deserializer(method.output);
    switch (method.methodKind) {
      case "unary":
        out[method.localName] = (request: MessageInitShape<DescMessage>, options?: CallOptions) =>
          new Promise((resolve, reject) => {
            client.makeUnaryRequest(
              path,
              ser,
              de,
              create(method.input, request),
              options?.metadata ?? new grpc.Metadata(),
              deadlineOf(options),
              (err, value) => (err ? reject(err) : resolve(value)),
            );
          });
        break;
      case "bidi_streaming":
        out[method.localName] = (options?: CallOptions) =>
          client.makeBidiStreamRequest(path, ser, de, options?.metadata ?? new grpc.Metadata(), deadlineOf(options));
        break;
      case "server_streaming":
        out[method.localName] = (request: MessageInitShape<DescMessage>, options?: CallOptions) =>
          client.makeServerStreamRequest(
            path,
            ser,
            de,
            create(method.input, request),
            options?.metadata ?? new grpc.Metadata(),
            deadlineOf(options),
          );
        break;
      case "client_streaming":
        break;
    }
  }
  return out as TypedClient<S>;
}

/** The typed client of a generated service: `ClientOf<typeof ProxyBroker>`. */
export type ClientOf<T> = T extends GenService<infer S extends GenServiceMethods> ? TypedClient<S> : never;

/** The method shapes of a generated service, for typing handler maps. */
export type MethodsOf<T> = T extends GenService<infer S extends GenServiceMethods> ? S : never;
