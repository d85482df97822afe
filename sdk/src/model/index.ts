/**
 * The lease model and its pure rules, shared by the broker, its stores and the SDK: the plain
 * types (times in epoch ms, durations in ms), domain-keys and domain policies, proxy specs, and
 * the scoring numbers of the contract (docs/spec.md §2). No I/O.
 */
export { InvalidInputError, isValidHost, normalizeHost, hostFromDomain, hostFromUrl, targetHost } from "./domain-key.js";
export { BROKER_DEFAULTS } from "./broker-defaults.js";
export {
  MAX_EXPECTATION_MIN_BYTES,
  MAX_EXPECTATION_TEXT_LENGTH,
  MAX_EXPECTATION_TEXTS,
  checkExpectations,
  expectsNothing,
  storedExpectations,
} from "./expectations.js";
export type { PolicyExpectations } from "./expectations.js";
export {
  affinityOf,
  hostIsolation,
  isolationGroupOf,
  keyGroup,
  keyIsolation,
  normalizeIsolationGroup,
  shareKeyOf,
  storedIsolation,
} from "./isolation.js";
export type { HostIsolation, JoinedKey } from "./isolation.js";
export { EMPTY_CLAIM, MAX_CLAIM_KEYS, MAX_CLAIM_MEMBERS, claimRoute, claimedPairs, claimsAnything, sameClaim } from "./fallback-claim.js";
export type { ClaimRoute, ClaimedKey, ClaimedPairs, FallbackClaim } from "./fallback-claim.js";
export { DEFAULT_POOL, MAX_WORKERS_PER_POOL, OUTCOME_KIND_NAMES } from "./model.js";
export type {
  OutcomeKindName,
  ProxyStateName,
  LostReasonName,
  ProxySpecInput,
  ProxyView,
  PacingAnchor,
  DomainPolicySpec,
  RetiredPolicySet,
  PolicySet,
  DomainPacing,
  EpochState,
  EpochRequest,
  HoldState,
  StoreServer,
  DomainUse,
  Reservations,
  AcquireParams,
  IsolationParams,
  PoolEvent,
  NewPoolEvent,
  AuditEntry,
  NewAuditEntry,
  ProxyAction,
  ProxyActionResult,
  LeaseView,
  AcquireResult,
  RenewParams,
  RenewResult,
  OutcomeInput,
  ReleaseParams,
  ReleaseResult,
  OutcomeReport,
  HealthResult,
  WorkerSeen,
  WorkerTouch,
  WorkerHeard,
  PoolStats,
} from "./model.js";
export {
  normalizePattern,
  normalizeGroup,
  patternMatches,
  findPolicy,
  effectivePolicy,
  applyPolicy,
  shadowKeys,
  policySpec,
  policyParams,
} from "./policy.js";
export type { PolicyDefaults, EffectivePolicy, PolicyParams } from "./policy.js";
export { validateTierAndLabels, parseProxySpec } from "./proxy-spec.js";
export { MAX_TEMPLATE_PROXIES, expandTemplate, sessionName } from "./proxy-template.js";
export type { ProxyTemplateInput, TemplateProxy } from "./proxy-template.js";
export { MAX_PROXY_ID_LENGTH, endpointOf, idUsername, proxyIdOf, storedIdOf, urlUsername, usernameOf } from "./proxy-id.js";
export {
  DEFAULT_SCORING,
  clampScore,
  scoreAfterOutcome,
  scoreAfterHealth,
  isFailure,
  quarantineLengthMs,
  rateLimitBackoffMs,
  nextEwma,
  learnedAt,
  adaptOnRateLimited,
  adaptOnSuccess,
  baseInterval,
} from "./scoring.js";
export type { ScoringConfig, AdaptivePacingConfig, AdaptiveState, GrantPacing } from "./scoring.js";
export { rendezvousWeight, ownerOf, shareOf } from "./rendezvous.js";
export { exitGroups, groupKeys, shareOfGroups } from "./exit-groups.js";
export type { ExitMember, ShareMember } from "./exit-groups.js";
export { NO_SOURCE_STATUS } from "./source.js";
export type { SourceFormat, SourceResult, SourceSpec, SourceStatus, SourceView } from "./source.js";
export { DEFAULT_SILENT_AFTER_MS, GAP_MARGIN_MS, MAX_SILENT_AFTER_MS, YIELD_HOLD_MS, claimServedAt, silentHoldMs } from "./silence.js";
