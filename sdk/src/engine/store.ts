import type {
  StoreBackend,
  StoreEvents,
  StoreLeader,
  StoreLeases,
  StorePolicies,
  StoreProxies,
  StoreRecovery,
  StoreSources,
  StoreWorkers,
} from "./roles.js";

export type { Campaign, ReleaseFeed } from "./roles.js";

/**
 * The lease store: everything the broker keeps, in the roles of roles.ts, with three
 * implementations (Redis with one Lua script per operation, the sharded store over it, and the
 * in-memory engine). All pass the conformance suite in test/sdk/engine/conformance. The service
 * layer validates input, resolves policies and waits (G6); a store only decides, atomically, on
 * already-valid requests.
 *
 * A store rejects with `StoreUnavailableError` when its backend cannot be reached; it never turns
 * a backend failure into an empty answer.
 */
export interface LeaseStore
  extends StoreLeases,
    StoreProxies,
    StoreWorkers,
    StorePolicies,
    StoreLeader,
    StoreEvents,
    StoreRecovery,
    StoreSources,
    StoreBackend {}

/** The store's backend (Redis) cannot be reached or did not answer in time. */
export class StoreUnavailableError extends Error {
  override readonly name = "StoreUnavailableError";
  readonly code = "STORE_UNAVAILABLE";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A health-check result of an older leader term than one the store has seen (see `StoreLeader.campaign`). */
export class StaleTermError extends Error {
  override readonly name = "StaleTermError";
}
