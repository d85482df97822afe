/**
 * The wire: a grpc-js adapter for the protobuf-es service descriptors (server definitions and
 * typed clients) and the conversions between protobuf messages and the plain model. Used by the
 * broker's server and by the SDK's client.
 */
export {
  msOf,
  durationOf,
  epochMsOf,
  timestampOf,
  outcomeNameOf,
  outcomeKindOf,
  proxyStateOf,
  proxyStateNameOf,
  lostReasonOf,
  proxyToWire,
  proxyFromWire,
  leaseToWire,
  leaseFromWire,
  policyToWire,
  policyFromWire,
  claimToWire,
  claimFromWire,
} from "./codec.js";
export { methodPath, serviceDefinition, addService, createClient } from "./grpc-adapter.js";
export type { HandlerFor, ServiceHandlers, CallOptions, ClientMethodFor, TypedClient, ClientOf, MethodsOf } from "./grpc-adapter.js";
