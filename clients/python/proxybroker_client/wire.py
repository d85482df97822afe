"""Conversions between Python values and the contract's protobuf messages (internal)."""

from __future__ import annotations

from typing import Optional, Union

from google.protobuf import duration_pb2, timestamp_pb2

from .gen.proxybroker.v1 import broker_pb2 as pb

#: Outcome kinds by their short name (the wire names carry the ``OUTCOME_KIND_`` prefix).
OUTCOME_KINDS = ("SUCCESS", "RATE_LIMITED", "BLOCKED", "PROXY_ERROR", "TARGET_ERROR", "ABANDONED")


def duration(seconds: Optional[float]) -> Optional[duration_pb2.Duration]:
    """Seconds (float) to a Duration; None stays None (field left unset)."""
    if seconds is None:
        return None
    if seconds < 0:
        raise ValueError(f"duration must not be negative: {seconds}")
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(round(seconds * 1e9)))
    return d


def seconds_of(d: duration_pb2.Duration) -> float:
    """A Duration as float seconds."""
    return d.seconds + d.nanos / 1e9


def epoch_of(ts: timestamp_pb2.Timestamp) -> float:
    """A Timestamp as float seconds since the epoch (0.0 when unset)."""
    return ts.seconds + ts.nanos / 1e9


def timestamp(epoch_seconds: float) -> timestamp_pb2.Timestamp:
    """Float seconds since the epoch to a Timestamp."""
    ts = timestamp_pb2.Timestamp()
    ts.FromNanoseconds(int(round(epoch_seconds * 1e9)))
    return ts


def outcome_kind(kind: Union[str, int]) -> int:
    """``"SUCCESS"``, ``"OUTCOME_KIND_SUCCESS"`` or the enum number, to the enum number."""
    if isinstance(kind, int):
        if kind not in pb.OutcomeKind.values():
            raise ValueError(f"unknown outcome kind {kind}")
        return kind
    name = kind.upper()
    if not name.startswith("OUTCOME_KIND_"):
        name = "OUTCOME_KIND_" + name
    try:
        return pb.OutcomeKind.Value(name)
    except ValueError:
        raise ValueError(f"unknown outcome kind {kind!r}; one of {', '.join(OUTCOME_KINDS)}") from None


def short_name(enum_type, value: int, prefix: str) -> str:
    """An enum number as its name without the wire prefix (``DENY_REASON_NOT_FOUND`` → ``NOT_FOUND``)."""
    try:
        name = enum_type.Name(value)
    except ValueError:
        return str(value)
    return name[len(prefix):] if name.startswith(prefix) else name
