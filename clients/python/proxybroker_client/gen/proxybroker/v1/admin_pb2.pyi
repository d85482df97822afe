from proxybroker_client.gen.proxybroker.v1 import broker_pb2 as _broker_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AddProxiesRequest(_message.Message):
    __slots__ = ["pool", "proxies"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    PROXIES_FIELD_NUMBER: _ClassVar[int]
    pool: str
    proxies: _containers.RepeatedCompositeFieldContainer[ProxySpec]
    def __init__(self, pool: _Optional[str] = ..., proxies: _Optional[_Iterable[_Union[ProxySpec, _Mapping]]] = ...) -> None: ...

class AddProxiesResponse(_message.Message):
    __slots__ = ["added", "rejected", "updated"]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    added: _containers.RepeatedScalarFieldContainer[str]
    rejected: _containers.RepeatedCompositeFieldContainer[RejectedProxy]
    updated: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, added: _Optional[_Iterable[str]] = ..., updated: _Optional[_Iterable[str]] = ..., rejected: _Optional[_Iterable[_Union[RejectedProxy, _Mapping]]] = ...) -> None: ...

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

class GetPoolStatsRequest(_message.Message):
    __slots__ = ["pool"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: str
    def __init__(self, pool: _Optional[str] = ...) -> None: ...

class GetPoolStatsResponse(_message.Message):
    __slots__ = ["active", "blacklisted", "disabled", "live_workers", "pool", "quarantined", "total"]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    BLACKLISTED_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    LIVE_WORKERS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    active: int
    blacklisted: int
    disabled: int
    live_workers: int
    pool: str
    quarantined: int
    total: int
    def __init__(self, pool: _Optional[str] = ..., total: _Optional[int] = ..., active: _Optional[int] = ..., quarantined: _Optional[int] = ..., blacklisted: _Optional[int] = ..., disabled: _Optional[int] = ..., live_workers: _Optional[int] = ...) -> None: ...

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

class RejectedProxy(_message.Message):
    __slots__ = ["reason", "url"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    reason: str
    url: str
    def __init__(self, url: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

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
