/**
 * The lease engine: the `LeaseStore` contract (its roles) and its in-memory implementation, shared by the
 * broker (embedded store) and the SDK (local fallback pool).
 */
export type { LeaseStore } from "./store.js";
export type {
  Campaign,
  ReleaseFeed,
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
export { StoreUnavailableError, StaleTermError } from "./store.js";
export { MemoryStore, POLICY_HISTORY_MS } from "./memory-store.js";
export { HISTORY_MAX } from "./memory/policies.js";
export type { MemoryStoreOptions } from "./memory-store.js";
export { exitAudit } from "./memory/exit-health.js";
export { FORMER_EXIT_MS, hostOf } from "./memory/exits.js";
export { GAP_MIN_MS } from "./memory/reservations.js";
export type { ExitChange } from "./memory/exits.js";
