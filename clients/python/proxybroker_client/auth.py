"""Bearer tokens and TLS for the connection to a broker started with ``AUTH_TOKENS_FILE`` / ``TLS_*``."""

from __future__ import annotations

import collections
import re
from typing import Optional

import grpc

_TOKEN = re.compile(r"^[\x21-\x7e]{1,4096}$")


class _Details(
    collections.namedtuple(
        "_Details", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")
    ),
    grpc.ClientCallDetails,
):
    pass


class TokenInterceptor(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Sends ``authorization: Bearer <token>`` with every call, over TLS and plaintext alike."""

    def __init__(self, token: str) -> None:
        check_token(token)
        self._header = ("authorization", f"Bearer {token}")

    def _details(self, d: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = [m for m in (d.metadata or ()) if m[0] != "authorization"] + [self._header]
        return _Details(
            d.method, d.timeout, metadata, d.credentials,
            getattr(d, "wait_for_ready", None), getattr(d, "compression", None),
        )

    def intercept_unary_unary(self, continuation, client_call_details, request):
        return continuation(self._details(client_call_details), request)

    def intercept_unary_stream(self, continuation, client_call_details, request):
        return continuation(self._details(client_call_details), request)

    def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        return continuation(self._details(client_call_details), request_iterator)

    def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return continuation(self._details(client_call_details), request_iterator)


def check_token(token: str) -> None:
    """Raise ``ValueError`` unless ``token`` is printable ASCII without spaces."""
    if not isinstance(token, str) or not _TOKEN.match(token):
        raise ValueError("token must be printable ASCII without spaces")


def tls_credentials(
    ca: Optional[bytes] = None, cert: Optional[bytes] = None, key: Optional[bytes] = None
) -> grpc.ChannelCredentials:
    """TLS credentials: ``ca`` (PEM) that signed the broker's certificate (None: the system's
    roots), and for a broker that requires client certificates (mTLS) this worker's ``cert`` and
    ``key`` (PEM)."""
    if (cert is None) != (key is None):
        raise ValueError("tls_cert and tls_key go together")
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)
