"""Classifier rules from the broker's domain policies (their response expectations).

A domain policy may say what a good answer of its hosts looks like: block markers, required
markers, a minimum size, slow-down patterns (texts, matched case-insensitively as substrings).
:func:`expectation_rules` lays them over a set of :class:`~proxybroker_client.classify.Rules`
exactly as the TypeScript SDK does: block markers join the captcha body patterns, slow-down
patterns join those, required markers become the markers and the minimum size ``min_bytes``.
The policy that applies to a host is chosen as the broker chooses it: the exact host, else the
longest matching ``*.suffix`` (subdomains only), else ``*``.

:class:`BrokerPolicies` keeps the pool's policies as the broker has them, fetched with
``GetPoolSnapshot`` in the background: the caller never waits on the network.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any, Callable, Optional, Sequence

import grpc

from .classify import Rules
from .gen.proxybroker.v1 import broker_pb2 as pb

#: How often the policy version is checked (seconds); the policies are fetched when it changed.
POLICY_REFRESH = 30.0


def expectation_rules(base: Rules, expectations: Any) -> Rules:
    """``base`` with a policy's ``ResponseExpectations`` laid over it."""
    changes: dict = {
        "captcha_body_patterns": tuple(base.captcha_body_patterns) + tuple(expectations.block_markers),
        "slow_down_body_patterns": tuple(base.slow_down_body_patterns) + tuple(expectations.slow_down_patterns),
    }
    if expectations.required_markers:
        changes["markers"] = tuple(expectations.required_markers)
    if expectations.min_bytes > 0:
        changes["min_bytes"] = expectations.min_bytes
    return dataclasses.replace(base, **changes)


def expects_something(expectations: Any) -> bool:
    """Whether a ``ResponseExpectations`` expects anything at all."""
    return bool(
        expectations.block_markers
        or expectations.required_markers
        or expectations.min_bytes > 0
        or expectations.slow_down_patterns
    )


def rule_host(host: str) -> str:
    """A host as policy patterns see it: lowercase, no port, no trailing dot, punycode."""
    h = host.strip().lower()
    if h.startswith("["):
        return h
    if h.count(":") == 1:
        h = h.split(":", 1)[0]
    h = h.rstrip(".")
    try:
        return h.encode("idna").decode("ascii")
    except UnicodeError:
        return h


def _matches(pattern: str, host: str) -> bool:
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
    return pattern == host


def _specificity(pattern: str) -> int:
    if pattern == "*":
        return 0
    if pattern.startswith("*."):
        return len(pattern)
    return 1 << 62


def find_policy(policies: Sequence[Any], host: str) -> Optional[Any]:
    """The policy (a ``DomainPolicy``) that applies to ``host``, if any."""
    h = rule_host(host)
    best = None
    for p in policies:
        if _matches(p.pattern, h) and (best is None or _specificity(p.pattern) > _specificity(best.pattern)):
            best = p
    return best


class BrokerPolicies:
    """The pool's domain policies, refreshed in the background; :meth:`rules_for` never blocks.

    The first call starts a fetch (until it is answered, hosts get ``base``); after that the
    policy version is checked every ``refresh`` seconds (a light ``workers_only`` snapshot) and
    the policies fetched again when it changed. A failed fetch keeps what was known.
    """

    def __init__(
        self,
        stub: Any,
        pool: str,
        *,
        refresh: float = POLICY_REFRESH,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stub = stub
        self._pool = pool
        self._refresh = refresh
        self._timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._policies: Sequence[Any] = ()
        self._version: Optional[str] = None
        self._checked_at: Optional[float] = None
        self._in_flight = False
        # rules built per (policy object, base rules): policies are replaced whole on a change
        self._built: dict = {}

    def rules_for(self, host: str, base: Rules) -> Rules:
        """The rules for ``host``: its policy's expectations laid over ``base``, else ``base``."""
        self._maybe_refresh()
        with self._lock:
            policies = self._policies
        p = find_policy(policies, host)
        if p is None or not p.HasField("expectations") or not expects_something(p.expectations):
            return base
        key = (id(p), id(base))
        with self._lock:
            entry = self._built.get(key)
            if entry is None or entry[0] is not p or entry[1] is not base:
                entry = (p, base, expectation_rules(base, p.expectations))
                self._built[key] = entry
        return entry[2]

    @property
    def version(self) -> Optional[str]:
        """The policy version of the policies held (None before the first fetch)."""
        return self._version

    def _maybe_refresh(self) -> None:
        now = self._clock()
        with self._lock:
            due = self._checked_at is None or now - self._checked_at >= self._refresh
            if not due or self._in_flight:
                return
            self._in_flight = True
            self._checked_at = now
            light = self._version is not None
        self._fetch(light)

    def _fetch(self, light: bool) -> None:
        """Ask for the policy version only (``light``), or for the whole snapshot."""
        req = pb.GetPoolSnapshotRequest(pool=self._pool, workers_only=light)
        try:
            fut = self._stub.GetPoolSnapshot.future(req, timeout=self._timeout)
        except ValueError:  # the channel is closed
            with self._lock:
                self._in_flight = False
            return
        fut.add_done_callback(lambda f: self._answered(f, light))

    def _answered(self, fut: "grpc.Future", light: bool) -> None:
        try:
            res = fut.result()
        except grpc.RpcError:
            res = None
        if res is not None and light and res.policy_version != self._version:
            self._fetch(False)
            return
        with self._lock:
            if res is not None and not light:
                self._policies = tuple(res.policies)
                self._version = res.policy_version
                self._built = {}
            self._in_flight = False
