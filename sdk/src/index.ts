/**
 * The ProxyBroker SDK for TypeScript workers: lease proxies from a broker with automatic
 * heartbeats, fetch through them, classify what came back, and keep working from a local
 * fallback pool while the broker is unreachable (SPEC §7).
 *
 * ```ts
 * const client = new ProxyBrokerClient({ address: "127.0.0.1:50051" });
 * const { response, outcome } = await client.fetch("https://shop.example.com/p/1");
 * ```
 */
export { ProxyBrokerClient } from "./client/client.js";
export type { AcquireOptions, WithLeaseOptions } from "./client/acquire-options.js";
export type { ClientEvents, ClientMode, LeaseLostEvent } from "./client/events.js";
export type { ClientStateChange, ClientStateName } from "./client/state.js";
export type { BreakerOptions, ClientOptions, FallbackOptions } from "./client/options.js";
export type { TlsOptions } from "./client/credentials.js";
export { defaultWorkerId } from "./client/options.js";
export { Lease } from "./client/lease.js";
export type { LeasedProxy, LeaseOutcome, LeaseSource } from "./client/lease.js";
export {
  BrokerClientError,
  BrokerSlowError,
  ClientClosedError,
  InvalidArgumentError,
  LeaseLostError,
  NoProxyAvailableError,
} from "./client/errors.js";
export type { LeaseLostReason } from "./client/errors.js";
export { OutcomeError } from "./client/outcome-carrier.js";
export type { BreakerState } from "./client/breaker.js";
export type { FetchOptions, FetchResult } from "./client/fetch.js";
export type { FallbackPoolView } from "./fallback/pool-view.js";
export type { PoolSnapshot } from "./fallback/snapshot.js";
export { Classifier, classify, classifyError, isTextual, parseMarker } from "./classify/index.js";
export type { Classification, ClassifierOptions, Expectations, ResponseFacts } from "./classify/index.js";
export type { OutcomeKindName } from "./model/model.js";
