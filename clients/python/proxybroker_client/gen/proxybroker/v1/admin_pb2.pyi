from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from proxybroker_client.gen.proxybroker.v1 import broker_pb2 as _broker_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
POOL_EVENT_KIND_ADMIN: PoolEventKind
POOL_EVENT_KIND_BAN: PoolEventKind
POOL_EVENT_KIND_BLACKLIST: PoolEventKind
POOL_EVENT_KIND_COOL_DOWN: PoolEventKind
POOL_EVENT_KIND_EXIT: PoolEventKind
POOL_EVENT_KIND_GRANT: PoolEventKind
POOL_EVENT_KIND_LEADER: PoolEventKind
POOL_EVENT_KIND_POLICY: PoolEventKind
POOL_EVENT_KIND_QUARANTINE: PoolEventKind
POOL_EVENT_KIND_UNSPECIFIED: PoolEventKind

class AddProxiesRequest(_message.Message):
    __slots__ = ["pool", "proxies", "template"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    PROXIES_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    pool: str
    proxies: _containers.RepeatedCompositeFieldContainer[ProxySpec]
    template: ProxyTemplate
    def __init__(self, pool: _Optional[str] = ..., proxies: _Optional[_Iterable[_Union[ProxySpec, _Mapping]]] = ..., template: _Optional[_Union[ProxyTemplate, _Mapping]] = ...) -> None: ...

class AddProxiesResponse(_message.Message):
    __slots__ = ["added", "rejected", "updated"]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    added: _containers.RepeatedScalarFieldContainer[str]
    rejected: _containers.RepeatedCompositeFieldContainer[RejectedProxy]
    updated: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, added: _Optional[_Iterable[str]] = ..., updated: _Optional[_Iterable[str]] = ..., rejected: _Optional[_Iterable[_Union[RejectedProxy, _Mapping]]] = ...) -> None: ...

class AddSourceRequest(_message.Message):
    __slots__ = ["format", "headers_file", "interval", "json_path", "labels", "pool", "tier", "url"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FILE_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    JSON_PATH_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    format: str
    headers_file: str
    interval: _duration_pb2.Duration
    json_path: str
    labels: _containers.ScalarMap[str, str]
    pool: str
    tier: str
    url: str
    def __init__(self, pool: _Optional[str] = ..., url: _Optional[str] = ..., format: _Optional[str] = ..., json_path: _Optional[str] = ..., headers_file: _Optional[str] = ..., interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., tier: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class AddSourceResponse(_message.Message):
    __slots__ = ["created", "source"]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    created: bool
    source: Source
    def __init__(self, source: _Optional[_Union[Source, _Mapping]] = ..., created: bool = ...) -> None: ...

class AuditEntry(_message.Message):
    __slots__ = ["actor", "detail", "method", "pool", "time"]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    actor: str
    detail: str
    method: str
    pool: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., actor: _Optional[str] = ..., method: _Optional[str] = ..., pool: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class BanProxiesRequest(_message.Message):
    __slots__ = ["domain", "ids", "pool", "ttl"]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    domain: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    pool: str
    ttl: _duration_pb2.Duration
    def __init__(self, pool: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., domain: _Optional[str] = ..., ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class BanProxiesResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: ProxyActionResult
    def __init__(self, result: _Optional[_Union[ProxyActionResult, _Mapping]] = ...) -> None: ...

class CheckProgress(_message.Message):
    __slots__ = ["checked", "errors", "failed", "passed", "proxy_id", "result", "total"]
    CHECKED_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    PROXY_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    checked: int
    errors: int
    failed: int
    passed: int
    proxy_id: str
    result: str
    total: int
    def __init__(self, total: _Optional[int] = ..., checked: _Optional[int] = ..., passed: _Optional[int] = ..., failed: _Optional[int] = ..., errors: _Optional[int] = ..., proxy_id: _Optional[str] = ..., result: _Optional[str] = ...) -> None: ...

class CheckProxiesRequest(_message.Message):
    __slots__ = ["pool"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: str
    def __init__(self, pool: _Optional[str] = ...) -> None: ...

class CheckProxiesResponse(_message.Message):
    __slots__ = ["progress"]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    progress: CheckProgress
    def __init__(self, progress: _Optional[_Union[CheckProgress, _Mapping]] = ...) -> None: ...

class DeleteDomainPolicyRequest(_message.Message):
    __slots__ = ["pattern", "pool"]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    pool: str
    def __init__(self, pool: _Optional[str] = ..., pattern: _Optional[str] = ...) -> None: ...

class DeleteDomainPolicyResponse(_message.Message):
    __slots__ = ["deleted"]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: bool = ...) -> None: ...

class DisableProxiesRequest(_message.Message):
    __slots__ = ["ids", "pool"]
    IDS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    pool: str
    def __init__(self, pool: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DisableProxiesResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: ProxyActionResult
    def __init__(self, result: _Optional[_Union[ProxyActionResult, _Mapping]] = ...) -> None: ...

class DomainStats(_message.Message):
    __slots__ = ["bans_last_hour", "cool_downs_last_hour", "domain", "effective_interval", "grants_last_minute"]
    BANS_LAST_HOUR_FIELD_NUMBER: _ClassVar[int]
    COOL_DOWNS_LAST_HOUR_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    GRANTS_LAST_MINUTE_FIELD_NUMBER: _ClassVar[int]
    bans_last_hour: int
    cool_downs_last_hour: int
    domain: str
    effective_interval: _duration_pb2.Duration
    grants_last_minute: int
    def __init__(self, domain: _Optional[str] = ..., grants_last_minute: _Optional[int] = ..., bans_last_hour: _Optional[int] = ..., effective_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., cool_downs_last_hour: _Optional[int] = ...) -> None: ...

class EnableProxiesRequest(_message.Message):
    __slots__ = ["ids", "pool"]
    IDS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    pool: str
    def __init__(self, pool: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class EnableProxiesResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: ProxyActionResult
    def __init__(self, result: _Optional[_Union[ProxyActionResult, _Mapping]] = ...) -> None: ...

class GetDomainPacingRequest(_message.Message):
    __slots__ = ["domains", "pool"]
    DOMAINS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    domains: _containers.RepeatedScalarFieldContainer[str]
    pool: str
    def __init__(self, pool: _Optional[str] = ..., domains: _Optional[_Iterable[str]] = ...) -> None: ...

class GetDomainPacingResponse(_message.Message):
    __slots__ = ["domains"]
    DOMAINS_FIELD_NUMBER: _ClassVar[int]
    domains: _containers.RepeatedCompositeFieldContainer[_broker_pb2.DomainPacing]
    def __init__(self, domains: _Optional[_Iterable[_Union[_broker_pb2.DomainPacing, _Mapping]]] = ...) -> None: ...

class GetDomainStatsRequest(_message.Message):
    __slots__ = ["pool"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: str
    def __init__(self, pool: _Optional[str] = ...) -> None: ...

class GetDomainStatsResponse(_message.Message):
    __slots__ = ["domains"]
    DOMAINS_FIELD_NUMBER: _ClassVar[int]
    domains: _containers.RepeatedCompositeFieldContainer[DomainStats]
    def __init__(self, domains: _Optional[_Iterable[_Union[DomainStats, _Mapping]]] = ...) -> None: ...

class GetPoolStatsRequest(_message.Message):
    __slots__ = ["pool"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: str
    def __init__(self, pool: _Optional[str] = ...) -> None: ...

class GetPoolStatsResponse(_message.Message):
    __slots__ = ["active", "blacklisted", "disabled", "grants_held_until", "live_workers", "longest_ttl", "pool", "quarantined", "total"]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    BLACKLISTED_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    GRANTS_HELD_UNTIL_FIELD_NUMBER: _ClassVar[int]
    LIVE_WORKERS_FIELD_NUMBER: _ClassVar[int]
    LONGEST_TTL_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    active: int
    blacklisted: int
    disabled: int
    grants_held_until: _timestamp_pb2.Timestamp
    live_workers: int
    longest_ttl: _duration_pb2.Duration
    pool: str
    quarantined: int
    total: int
    def __init__(self, pool: _Optional[str] = ..., total: _Optional[int] = ..., active: _Optional[int] = ..., quarantined: _Optional[int] = ..., blacklisted: _Optional[int] = ..., disabled: _Optional[int] = ..., live_workers: _Optional[int] = ..., grants_held_until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., longest_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ListAuditRequest(_message.Message):
    __slots__ = ["limit"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListAuditResponse(_message.Message):
    __slots__ = ["entries"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[AuditEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[AuditEntry, _Mapping]]] = ...) -> None: ...

class ListDomainPoliciesRequest(_message.Message):
    __slots__ = ["pool"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: str
    def __init__(self, pool: _Optional[str] = ...) -> None: ...

class ListDomainPoliciesResponse(_message.Message):
    __slots__ = ["policies"]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    policies: _containers.RepeatedCompositeFieldContainer[_broker_pb2.DomainPolicy]
    def __init__(self, policies: _Optional[_Iterable[_Union[_broker_pb2.DomainPolicy, _Mapping]]] = ...) -> None: ...

class ListProxiesRequest(_message.Message):
    __slots__ = ["page_size", "page_token", "pool"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    pool: str
    def __init__(self, pool: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListProxiesResponse(_message.Message):
    __slots__ = ["next_page_token", "proxies"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PROXIES_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    proxies: _containers.RepeatedCompositeFieldContainer[_broker_pb2.Proxy]
    def __init__(self, proxies: _Optional[_Iterable[_Union[_broker_pb2.Proxy, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListSourcesRequest(_message.Message):
    __slots__ = ["pool"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: str
    def __init__(self, pool: _Optional[str] = ...) -> None: ...

class ListSourcesResponse(_message.Message):
    __slots__ = ["sources"]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    sources: _containers.RepeatedCompositeFieldContainer[Source]
    def __init__(self, sources: _Optional[_Iterable[_Union[Source, _Mapping]]] = ...) -> None: ...

class PoolEvent(_message.Message):
    __slots__ = ["actor", "detail", "domain", "id", "kind", "pool", "proxy_id", "time"]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    PROXY_ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    actor: str
    detail: str
    domain: str
    id: str
    kind: PoolEventKind
    pool: str
    proxy_id: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., kind: _Optional[_Union[PoolEventKind, str]] = ..., pool: _Optional[str] = ..., proxy_id: _Optional[str] = ..., domain: _Optional[str] = ..., detail: _Optional[str] = ..., actor: _Optional[str] = ...) -> None: ...

class ProxyActionResult(_message.Message):
    __slots__ = ["changed", "not_found", "unchanged"]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: _containers.RepeatedScalarFieldContainer[str]
    not_found: _containers.RepeatedScalarFieldContainer[str]
    unchanged: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, changed: _Optional[_Iterable[str]] = ..., unchanged: _Optional[_Iterable[str]] = ..., not_found: _Optional[_Iterable[str]] = ...) -> None: ...

class ProxySpec(_message.Message):
    __slots__ = ["labels", "tier", "url"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LABELS_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.ScalarMap[str, str]
    tier: str
    url: str
    def __init__(self, url: _Optional[str] = ..., tier: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ProxyTemplate(_message.Message):
    __slots__ = ["labels", "sessions", "tier", "url"]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.RepeatedCompositeFieldContainer[TemplateLabel]
    sessions: int
    tier: str
    url: str
    def __init__(self, url: _Optional[str] = ..., sessions: _Optional[int] = ..., labels: _Optional[_Iterable[_Union[TemplateLabel, _Mapping]]] = ..., tier: _Optional[str] = ...) -> None: ...

class RefreshSourceRequest(_message.Message):
    __slots__ = ["pool", "source"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    pool: str
    source: str
    def __init__(self, pool: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class RefreshSourceResponse(_message.Message):
    __slots__ = ["source"]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    source: Source
    def __init__(self, source: _Optional[_Union[Source, _Mapping]] = ...) -> None: ...

class RejectedProxy(_message.Message):
    __slots__ = ["index", "reason", "url"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    index: int
    reason: str
    url: str
    def __init__(self, url: _Optional[str] = ..., reason: _Optional[str] = ..., index: _Optional[int] = ...) -> None: ...

class RemoveProxiesRequest(_message.Message):
    __slots__ = ["ids", "pool"]
    IDS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    pool: str
    def __init__(self, pool: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class RemoveProxiesResponse(_message.Message):
    __slots__ = ["not_found", "removed"]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    not_found: _containers.RepeatedScalarFieldContainer[str]
    removed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, removed: _Optional[_Iterable[str]] = ..., not_found: _Optional[_Iterable[str]] = ...) -> None: ...

class RemoveSourceRequest(_message.Message):
    __slots__ = ["pool", "source"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    pool: str
    source: str
    def __init__(self, pool: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class RemoveSourceResponse(_message.Message):
    __slots__ = ["removed"]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    removed: bool
    def __init__(self, removed: bool = ...) -> None: ...

class RestoreProxiesRequest(_message.Message):
    __slots__ = ["ids", "pool"]
    IDS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    pool: str
    def __init__(self, pool: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class RestoreProxiesResponse(_message.Message):
    __slots__ = ["not_found", "restored"]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    not_found: _containers.RepeatedScalarFieldContainer[str]
    restored: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, restored: _Optional[_Iterable[str]] = ..., not_found: _Optional[_Iterable[str]] = ...) -> None: ...

class SetDomainPolicyRequest(_message.Message):
    __slots__ = ["policy", "pool"]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    policy: _broker_pb2.DomainPolicy
    pool: str
    def __init__(self, pool: _Optional[str] = ..., policy: _Optional[_Union[_broker_pb2.DomainPolicy, _Mapping]] = ...) -> None: ...

class SetDomainPolicyResponse(_message.Message):
    __slots__ = ["policy"]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    policy: _broker_pb2.DomainPolicy
    def __init__(self, policy: _Optional[_Union[_broker_pb2.DomainPolicy, _Mapping]] = ...) -> None: ...

class Source(_message.Message):
    __slots__ = ["added", "create_time", "format", "headers_file", "id", "interval", "json_path", "labels", "last_error", "last_refresh_time", "last_result", "last_success_time", "listed", "owned", "pool", "removed", "tier", "url"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ADDED_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FILE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    JSON_PATH_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_REFRESH_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_RESULT_FIELD_NUMBER: _ClassVar[int]
    LAST_SUCCESS_TIME_FIELD_NUMBER: _ClassVar[int]
    LISTED_FIELD_NUMBER: _ClassVar[int]
    OWNED_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    added: int
    create_time: _timestamp_pb2.Timestamp
    format: str
    headers_file: str
    id: str
    interval: _duration_pb2.Duration
    json_path: str
    labels: _containers.ScalarMap[str, str]
    last_error: str
    last_refresh_time: _timestamp_pb2.Timestamp
    last_result: str
    last_success_time: _timestamp_pb2.Timestamp
    listed: int
    owned: int
    pool: str
    removed: int
    tier: str
    url: str
    def __init__(self, id: _Optional[str] = ..., pool: _Optional[str] = ..., url: _Optional[str] = ..., format: _Optional[str] = ..., json_path: _Optional[str] = ..., headers_file: _Optional[str] = ..., interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., tier: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_refresh_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_success_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_result: _Optional[str] = ..., last_error: _Optional[str] = ..., listed: _Optional[int] = ..., added: _Optional[int] = ..., removed: _Optional[int] = ..., owned: _Optional[int] = ...) -> None: ...

class TemplateLabel(_message.Message):
    __slots__ = ["key", "values"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class UnbanProxiesRequest(_message.Message):
    __slots__ = ["domain", "ids", "pool"]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    domain: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    pool: str
    def __init__(self, pool: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., domain: _Optional[str] = ...) -> None: ...

class UnbanProxiesResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: ProxyActionResult
    def __init__(self, result: _Optional[_Union[ProxyActionResult, _Mapping]] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ["after", "grants", "pool"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    after: str
    grants: bool
    pool: str
    def __init__(self, pool: _Optional[str] = ..., grants: bool = ..., after: _Optional[str] = ...) -> None: ...

class WatchEventsResponse(_message.Message):
    __slots__ = ["event"]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: PoolEvent
    def __init__(self, event: _Optional[_Union[PoolEvent, _Mapping]] = ...) -> None: ...

class PoolEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
