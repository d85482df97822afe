/**
 * The lease engine: the `LeaseStore` contract and its in-memory implementation, shared by the
 * broker (embedded store) and the SDK (local fallback pool).
 */
export type { LeaseStore } from "./store.js";
export { StoreUnavailableError } from "./store.js";
export { MemoryStore } from "./memory-store.js";
export type { MemoryStoreOptions } from "./memory-store.js";
