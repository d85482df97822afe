from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DENY_REASON_INVALID_ARGUMENT: DenyReason
DENY_REASON_NOT_FOUND: DenyReason
DENY_REASON_NO_PROXY_AVAILABLE: DenyReason
DENY_REASON_UNAVAILABLE: DenyReason
DENY_REASON_UNSPECIFIED: DenyReason
DESCRIPTOR: _descriptor.FileDescriptor
LEASE_SOURCE_BROKER: LeaseSource
LEASE_SOURCE_FALLBACK: LeaseSource
LEASE_SOURCE_UNSPECIFIED: LeaseSource
LOST_REASON_EXPIRED: LostReason
LOST_REASON_NOT_FOUND: LostReason
LOST_REASON_REVOKED: LostReason
LOST_REASON_UNSPECIFIED: LostReason
OUTCOME_KIND_ABANDONED: OutcomeKind
OUTCOME_KIND_BLOCKED: OutcomeKind
OUTCOME_KIND_PROXY_ERROR: OutcomeKind
OUTCOME_KIND_RATE_LIMITED: OutcomeKind
OUTCOME_KIND_SUCCESS: OutcomeKind
OUTCOME_KIND_TARGET_ERROR: OutcomeKind
OUTCOME_KIND_UNSPECIFIED: OutcomeKind
PACING_MODE_AFTER_GRANT: PacingMode
PACING_MODE_AFTER_RELEASE: PacingMode
PACING_MODE_UNSPECIFIED: PacingMode
PROXY_STATE_ACTIVE: ProxyState
PROXY_STATE_BLACKLISTED: ProxyState
PROXY_STATE_DISABLED: ProxyState
PROXY_STATE_QUARANTINED: ProxyState
PROXY_STATE_UNSPECIFIED: ProxyState

class AcquireLeaseRequest(_message.Message):
    __slots__ = ["domain", "fallback_pool", "honors_lease_ttl", "labels", "max_wait", "pool", "proxy_id", "request_id", "reuse", "session_key", "target_url", "tier", "ttl", "worker_id", "yields_leases"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_POOL_FIELD_NUMBER: _ClassVar[int]
    HONORS_LEASE_TTL_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    PROXY_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REUSE_FIELD_NUMBER: _ClassVar[int]
    SESSION_KEY_FIELD_NUMBER: _ClassVar[int]
    TARGET_URL_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    YIELDS_LEASES_FIELD_NUMBER: _ClassVar[int]
    domain: str
    fallback_pool: bool
    honors_lease_ttl: bool
    labels: _containers.ScalarMap[str, str]
    max_wait: _duration_pb2.Duration
    pool: str
    proxy_id: str
    request_id: str
    reuse: bool
    session_key: str
    target_url: str
    tier: str
    ttl: _duration_pb2.Duration
    worker_id: str
    yields_leases: bool
    def __init__(self, request_id: _Optional[str] = ..., worker_id: _Optional[str] = ..., pool: _Optional[str] = ..., domain: _Optional[str] = ..., target_url: _Optional[str] = ..., session_key: _Optional[str] = ..., ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_wait: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., tier: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., proxy_id: _Optional[str] = ..., fallback_pool: bool = ..., yields_leases: bool = ..., reuse: bool = ..., honors_lease_ttl: bool = ...) -> None: ...

class AcquireLeaseResponse(_message.Message):
    __slots__ = ["lease"]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    lease: Lease
    def __init__(self, lease: _Optional[_Union[Lease, _Mapping]] = ...) -> None: ...

class ClaimedKey(_message.Message):
    __slots__ = ["domain", "share_key", "until_time", "whole"]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    SHARE_KEY_FIELD_NUMBER: _ClassVar[int]
    UNTIL_TIME_FIELD_NUMBER: _ClassVar[int]
    WHOLE_FIELD_NUMBER: _ClassVar[int]
    domain: str
    share_key: str
    until_time: _timestamp_pb2.Timestamp
    whole: bool
    def __init__(self, domain: _Optional[str] = ..., share_key: _Optional[str] = ..., whole: bool = ..., until_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DomainPacing(_message.Message):
    __slots__ = ["domain", "effective_interval", "learned_limit", "learned_time", "min_interval", "policy_pattern"]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    LEARNED_LIMIT_FIELD_NUMBER: _ClassVar[int]
    LEARNED_TIME_FIELD_NUMBER: _ClassVar[int]
    MIN_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    POLICY_PATTERN_FIELD_NUMBER: _ClassVar[int]
    domain: str
    effective_interval: _duration_pb2.Duration
    learned_limit: _duration_pb2.Duration
    learned_time: _timestamp_pb2.Timestamp
    min_interval: _duration_pb2.Duration
    policy_pattern: str
    def __init__(self, domain: _Optional[str] = ..., policy_pattern: _Optional[str] = ..., min_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., effective_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., learned_limit: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., learned_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DomainPolicy(_message.Message):
    __slots__ = ["affinity_window", "ban_ttl", "default_ttl", "expectations", "fixed_interval", "group", "isolation_group", "jitter", "max_concurrency", "max_interval", "min_interval", "pacing", "pattern"]
    AFFINITY_WINDOW_FIELD_NUMBER: _ClassVar[int]
    BAN_TTL_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TTL_FIELD_NUMBER: _ClassVar[int]
    EXPECTATIONS_FIELD_NUMBER: _ClassVar[int]
    FIXED_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_GROUP_FIELD_NUMBER: _ClassVar[int]
    JITTER_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    MAX_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    MIN_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    PACING_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    affinity_window: _duration_pb2.Duration
    ban_ttl: _duration_pb2.Duration
    default_ttl: _duration_pb2.Duration
    expectations: ResponseExpectations
    fixed_interval: bool
    group: str
    isolation_group: str
    jitter: _duration_pb2.Duration
    max_concurrency: int
    max_interval: _duration_pb2.Duration
    min_interval: _duration_pb2.Duration
    pacing: PacingMode
    pattern: str
    def __init__(self, pattern: _Optional[str] = ..., group: _Optional[str] = ..., max_concurrency: _Optional[int] = ..., min_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., default_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., ban_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., pacing: _Optional[_Union[PacingMode, str]] = ..., jitter: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., fixed_interval: bool = ..., expectations: _Optional[_Union[ResponseExpectations, _Mapping]] = ..., isolation_group: _Optional[str] = ..., affinity_window: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class DomainUse(_message.Message):
    __slots__ = ["domain", "expires_in", "listed_for"]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_IN_FIELD_NUMBER: _ClassVar[int]
    LISTED_FOR_FIELD_NUMBER: _ClassVar[int]
    domain: str
    expires_in: _duration_pb2.Duration
    listed_for: _duration_pb2.Duration
    def __init__(self, domain: _Optional[str] = ..., listed_for: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., expires_in: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class FallbackClaim(_message.Message):
    __slots__ = ["fresh", "keys", "members", "version"]
    FRESH_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    fresh: bool
    keys: _containers.RepeatedCompositeFieldContainer[ClaimedKey]
    members: _containers.RepeatedScalarFieldContainer[str]
    version: int
    def __init__(self, version: _Optional[int] = ..., members: _Optional[_Iterable[str]] = ..., keys: _Optional[_Iterable[_Union[ClaimedKey, _Mapping]]] = ..., fresh: bool = ...) -> None: ...

class GetPoolSnapshotRequest(_message.Message):
    __slots__ = ["lists_time", "pool", "worker_id", "workers_only"]
    LISTS_TIME_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    WORKERS_ONLY_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    lists_time: _timestamp_pb2.Timestamp
    pool: str
    worker_id: str
    workers_only: bool
    def __init__(self, pool: _Optional[str] = ..., worker_id: _Optional[str] = ..., workers_only: bool = ..., lists_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetPoolSnapshotResponse(_message.Message):
    __slots__ = ["domains_listed", "fallback_window", "live_workers", "longest_ttl", "pacing", "policies", "policy_version", "pool", "proxies", "reserve_interval", "snapshot_time", "worker_absent_after"]
    DOMAINS_LISTED_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_WINDOW_FIELD_NUMBER: _ClassVar[int]
    LIVE_WORKERS_FIELD_NUMBER: _ClassVar[int]
    LONGEST_TTL_FIELD_NUMBER: _ClassVar[int]
    PACING_FIELD_NUMBER: _ClassVar[int]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    PROXIES_FIELD_NUMBER: _ClassVar[int]
    RESERVE_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_TIME_FIELD_NUMBER: _ClassVar[int]
    WORKER_ABSENT_AFTER_FIELD_NUMBER: _ClassVar[int]
    domains_listed: bool
    fallback_window: _duration_pb2.Duration
    live_workers: _containers.RepeatedCompositeFieldContainer[WorkerInfo]
    longest_ttl: _duration_pb2.Duration
    pacing: _containers.RepeatedCompositeFieldContainer[DomainPacing]
    policies: _containers.RepeatedCompositeFieldContainer[DomainPolicy]
    policy_version: str
    pool: str
    proxies: _containers.RepeatedCompositeFieldContainer[Proxy]
    reserve_interval: _duration_pb2.Duration
    snapshot_time: _timestamp_pb2.Timestamp
    worker_absent_after: _duration_pb2.Duration
    def __init__(self, pool: _Optional[str] = ..., proxies: _Optional[_Iterable[_Union[Proxy, _Mapping]]] = ..., live_workers: _Optional[_Iterable[_Union[WorkerInfo, _Mapping]]] = ..., policies: _Optional[_Iterable[_Union[DomainPolicy, _Mapping]]] = ..., snapshot_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., pacing: _Optional[_Iterable[_Union[DomainPacing, _Mapping]]] = ..., longest_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., fallback_window: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., domains_listed: bool = ..., policy_version: _Optional[str] = ..., worker_absent_after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., reserve_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Lease(_message.Message):
    __slots__ = ["domain", "expire_time", "fencing_token", "lease_id", "pacing_unknown", "pool", "proxy", "reusable", "session_key", "session_rebound", "source", "ttl"]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    PACING_UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    PROXY_FIELD_NUMBER: _ClassVar[int]
    REUSABLE_FIELD_NUMBER: _ClassVar[int]
    SESSION_KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_REBOUND_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    domain: str
    expire_time: _timestamp_pb2.Timestamp
    fencing_token: int
    lease_id: str
    pacing_unknown: bool
    pool: str
    proxy: Proxy
    reusable: bool
    session_key: str
    session_rebound: bool
    source: LeaseSource
    ttl: _duration_pb2.Duration
    def __init__(self, lease_id: _Optional[str] = ..., fencing_token: _Optional[int] = ..., pool: _Optional[str] = ..., domain: _Optional[str] = ..., proxy: _Optional[_Union[Proxy, _Mapping]] = ..., expire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., session_key: _Optional[str] = ..., session_rebound: bool = ..., reusable: bool = ..., ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., pacing_unknown: bool = ..., source: _Optional[_Union[LeaseSource, str]] = ...) -> None: ...

class LeaseDenied(_message.Message):
    __slots__ = ["lease_id", "message", "reason", "request_id", "retry_after"]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    message: str
    reason: DenyReason
    request_id: str
    retry_after: _duration_pb2.Duration
    def __init__(self, request_id: _Optional[str] = ..., reason: _Optional[_Union[DenyReason, str]] = ..., message: _Optional[str] = ..., retry_after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., lease_id: _Optional[str] = ...) -> None: ...

class LeaseGranted(_message.Message):
    __slots__ = ["lease", "request_id"]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    lease: Lease
    request_id: str
    def __init__(self, request_id: _Optional[str] = ..., lease: _Optional[_Union[Lease, _Mapping]] = ...) -> None: ...

class LeaseLost(_message.Message):
    __slots__ = ["lease_id", "reason"]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    reason: LostReason
    def __init__(self, lease_id: _Optional[str] = ..., reason: _Optional[_Union[LostReason, str]] = ...) -> None: ...

class LeaseReleased(_message.Message):
    __slots__ = ["denied", "granted", "lease_id"]
    DENIED_FIELD_NUMBER: _ClassVar[int]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    denied: LeaseDenied
    granted: LeaseGranted
    lease_id: str
    def __init__(self, lease_id: _Optional[str] = ..., granted: _Optional[_Union[LeaseGranted, _Mapping]] = ..., denied: _Optional[_Union[LeaseDenied, _Mapping]] = ...) -> None: ...

class LeaseRenewed(_message.Message):
    __slots__ = ["expire_time", "lease_id", "ttl"]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    expire_time: _timestamp_pb2.Timestamp
    lease_id: str
    ttl: _duration_pb2.Duration
    def __init__(self, lease_id: _Optional[str] = ..., expire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class LeaseRequest(_message.Message):
    __slots__ = ["acquire", "ping", "release", "renew"]
    ACQUIRE_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    RENEW_FIELD_NUMBER: _ClassVar[int]
    acquire: AcquireLeaseRequest
    ping: Ping
    release: ReleaseLeaseRequest
    renew: RenewLeaseRequest
    def __init__(self, acquire: _Optional[_Union[AcquireLeaseRequest, _Mapping]] = ..., renew: _Optional[_Union[RenewLeaseRequest, _Mapping]] = ..., release: _Optional[_Union[ReleaseLeaseRequest, _Mapping]] = ..., ping: _Optional[_Union[Ping, _Mapping]] = ...) -> None: ...

class LeaseResponse(_message.Message):
    __slots__ = ["denied", "granted", "lost", "pong", "released", "renewed", "wanted"]
    DENIED_FIELD_NUMBER: _ClassVar[int]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    PONG_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    RENEWED_FIELD_NUMBER: _ClassVar[int]
    WANTED_FIELD_NUMBER: _ClassVar[int]
    denied: LeaseDenied
    granted: LeaseGranted
    lost: LeaseLost
    pong: Pong
    released: LeaseReleased
    renewed: LeaseRenewed
    wanted: LeaseWanted
    def __init__(self, granted: _Optional[_Union[LeaseGranted, _Mapping]] = ..., denied: _Optional[_Union[LeaseDenied, _Mapping]] = ..., renewed: _Optional[_Union[LeaseRenewed, _Mapping]] = ..., released: _Optional[_Union[LeaseReleased, _Mapping]] = ..., lost: _Optional[_Union[LeaseLost, _Mapping]] = ..., pong: _Optional[_Union[Pong, _Mapping]] = ..., wanted: _Optional[_Union[LeaseWanted, _Mapping]] = ...) -> None: ...

class LeaseWanted(_message.Message):
    __slots__ = ["lease_id"]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    def __init__(self, lease_id: _Optional[str] = ...) -> None: ...

class LeavePoolRequest(_message.Message):
    __slots__ = ["pool", "worker_id"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    pool: str
    worker_id: str
    def __init__(self, pool: _Optional[str] = ..., worker_id: _Optional[str] = ...) -> None: ...

class LeavePoolResponse(_message.Message):
    __slots__ = ["left"]
    LEFT_FIELD_NUMBER: _ClassVar[int]
    left: bool
    def __init__(self, left: bool = ...) -> None: ...

class ObservedOutcome(_message.Message):
    __slots__ = ["domain", "observe_time", "outcome", "proxy_id"]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    OBSERVE_TIME_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PROXY_ID_FIELD_NUMBER: _ClassVar[int]
    domain: str
    observe_time: _timestamp_pb2.Timestamp
    outcome: Outcome
    proxy_id: str
    def __init__(self, proxy_id: _Optional[str] = ..., domain: _Optional[str] = ..., outcome: _Optional[_Union[Outcome, _Mapping]] = ..., observe_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Outcome(_message.Message):
    __slots__ = ["bytes", "detail", "http_status", "kind", "latency", "retry_after"]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    HTTP_STATUS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LATENCY_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    detail: str
    http_status: int
    kind: OutcomeKind
    latency: _duration_pb2.Duration
    retry_after: _duration_pb2.Duration
    def __init__(self, kind: _Optional[_Union[OutcomeKind, str]] = ..., http_status: _Optional[int] = ..., latency: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., bytes: _Optional[int] = ..., retry_after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., detail: _Optional[str] = ...) -> None: ...

class Ping(_message.Message):
    __slots__ = ["claim", "fallback_pool", "heard_time", "pool", "worker_id"]
    CLAIM_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_POOL_FIELD_NUMBER: _ClassVar[int]
    HEARD_TIME_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    claim: FallbackClaim
    fallback_pool: bool
    heard_time: _timestamp_pb2.Timestamp
    pool: str
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ..., pool: _Optional[str] = ..., heard_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., fallback_pool: bool = ..., claim: _Optional[_Union[FallbackClaim, _Mapping]] = ...) -> None: ...

class Pong(_message.Message):
    __slots__ = ["claim_version", "time"]
    CLAIM_VERSION_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    claim_version: int
    time: _timestamp_pb2.Timestamp
    def __init__(self, time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., claim_version: _Optional[int] = ...) -> None: ...

class Proxy(_message.Message):
    __slots__ = ["exit_ip", "failure_count", "id", "labels", "last_used_by", "last_used_time", "latency_ewma", "quarantine_count", "quarantine_until", "score", "state", "success_count", "tier", "url"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    EXIT_IP_FIELD_NUMBER: _ClassVar[int]
    FAILURE_COUNT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_BY_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_TIME_FIELD_NUMBER: _ClassVar[int]
    LATENCY_EWMA_FIELD_NUMBER: _ClassVar[int]
    QUARANTINE_COUNT_FIELD_NUMBER: _ClassVar[int]
    QUARANTINE_UNTIL_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_COUNT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    exit_ip: str
    failure_count: int
    id: str
    labels: _containers.ScalarMap[str, str]
    last_used_by: str
    last_used_time: _timestamp_pb2.Timestamp
    latency_ewma: _duration_pb2.Duration
    quarantine_count: int
    quarantine_until: _timestamp_pb2.Timestamp
    score: float
    state: ProxyState
    success_count: int
    tier: str
    url: str
    def __init__(self, id: _Optional[str] = ..., url: _Optional[str] = ..., tier: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., score: _Optional[float] = ..., state: _Optional[_Union[ProxyState, str]] = ..., latency_ewma: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., success_count: _Optional[int] = ..., failure_count: _Optional[int] = ..., last_used_by: _Optional[str] = ..., last_used_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., quarantine_until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., quarantine_count: _Optional[int] = ..., exit_ip: _Optional[str] = ...) -> None: ...

class ReleaseLeaseRequest(_message.Message):
    __slots__ = ["fencing_token", "lease_id", "next", "outcome"]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    fencing_token: int
    lease_id: str
    next: AcquireLeaseRequest
    outcome: Outcome
    def __init__(self, lease_id: _Optional[str] = ..., fencing_token: _Optional[int] = ..., outcome: _Optional[_Union[Outcome, _Mapping]] = ..., next: _Optional[_Union[AcquireLeaseRequest, _Mapping]] = ...) -> None: ...

class ReleaseLeaseResponse(_message.Message):
    __slots__ = ["denied", "granted", "lease_id"]
    DENIED_FIELD_NUMBER: _ClassVar[int]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    denied: LeaseDenied
    granted: LeaseGranted
    lease_id: str
    def __init__(self, lease_id: _Optional[str] = ..., granted: _Optional[_Union[LeaseGranted, _Mapping]] = ..., denied: _Optional[_Union[LeaseDenied, _Mapping]] = ...) -> None: ...

class RenewLeaseRequest(_message.Message):
    __slots__ = ["fencing_token", "honors_lease_ttl", "lease_id", "ttl", "worker_id"]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    HONORS_LEASE_TTL_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    fencing_token: int
    honors_lease_ttl: bool
    lease_id: str
    ttl: _duration_pb2.Duration
    worker_id: str
    def __init__(self, lease_id: _Optional[str] = ..., fencing_token: _Optional[int] = ..., ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., worker_id: _Optional[str] = ..., honors_lease_ttl: bool = ...) -> None: ...

class RenewLeaseResponse(_message.Message):
    __slots__ = ["expire_time", "lease_id", "ttl"]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    expire_time: _timestamp_pb2.Timestamp
    lease_id: str
    ttl: _duration_pb2.Duration
    def __init__(self, lease_id: _Optional[str] = ..., expire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ReportOutcomesRequest(_message.Message):
    __slots__ = ["outcomes", "pool", "worker_id"]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[ObservedOutcome]
    pool: str
    worker_id: str
    def __init__(self, pool: _Optional[str] = ..., worker_id: _Optional[str] = ..., outcomes: _Optional[_Iterable[_Union[ObservedOutcome, _Mapping]]] = ...) -> None: ...

class ReportOutcomesResponse(_message.Message):
    __slots__ = ["applied"]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    applied: int
    def __init__(self, applied: _Optional[int] = ...) -> None: ...

class ResponseExpectations(_message.Message):
    __slots__ = ["block_markers", "min_bytes", "required_markers", "slow_down_patterns"]
    BLOCK_MARKERS_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_MARKERS_FIELD_NUMBER: _ClassVar[int]
    SLOW_DOWN_PATTERNS_FIELD_NUMBER: _ClassVar[int]
    block_markers: _containers.RepeatedScalarFieldContainer[str]
    min_bytes: int
    required_markers: _containers.RepeatedScalarFieldContainer[str]
    slow_down_patterns: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, block_markers: _Optional[_Iterable[str]] = ..., required_markers: _Optional[_Iterable[str]] = ..., min_bytes: _Optional[int] = ..., slow_down_patterns: _Optional[_Iterable[str]] = ...) -> None: ...

class WorkerInfo(_message.Message):
    __slots__ = ["domains", "fallback_pool", "last_seen_time", "worker_id", "yields_leases"]
    DOMAINS_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_POOL_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_TIME_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    YIELDS_LEASES_FIELD_NUMBER: _ClassVar[int]
    domains: _containers.RepeatedCompositeFieldContainer[DomainUse]
    fallback_pool: bool
    last_seen_time: _timestamp_pb2.Timestamp
    worker_id: str
    yields_leases: bool
    def __init__(self, worker_id: _Optional[str] = ..., last_seen_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., fallback_pool: bool = ..., yields_leases: bool = ..., domains: _Optional[_Iterable[_Union[DomainUse, _Mapping]]] = ...) -> None: ...

class OutcomeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ProxyState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DenyReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class PacingMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class LeaseSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class LostReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
