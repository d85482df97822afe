/**
 * The SDK's local fallback pool (SPEC §7): rendezvous shares, pool snapshots and their file, the
 * outcome buffer for replay, and the pool itself.
 */
export { FallbackPool, FALLBACK_LEASE_PREFIX } from "./fallback-pool.js";
export { FallbackLeases } from "./fallback-leases.js";
export { PoolMembership } from "./pool-membership.js";
export type { FallbackAcquireRequest, FallbackAcquireResult, FallbackLease, FallbackPoolOptions, PacedPair } from "./fallback-pool.js";
export { fallbackPoolView } from "./pool-view.js";
export type { FallbackPoolView } from "./pool-view.js";
export { DEFAULT_MAX_BUFFERED_OUTCOMES, FallbackOutcomes, OutcomeBuffer } from "./outcome-buffer.js";
export type { BufferedOutcome } from "./outcome-buffer.js";
export { ownerOf, rendezvousWeight, shareOf } from "../model/rendezvous.js";
export { exitGroups, shareOfGroups } from "../model/exit-groups.js";
export { loadSnapshotFile, saveSnapshotFile, SnapshotFileError } from "./snapshot.js";
export type { PoolSnapshot } from "./snapshot.js";
export { DomainShares } from "./domain-shares.js";
export type { DomainListing, DomainRoute, DomainSharesOptions } from "./domain-shares.js";
export { shareKeyOf } from "../model/isolation.js";
