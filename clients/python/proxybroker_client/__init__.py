"""Python client of ProxyBroker: lease HTTP proxies from the broker, exclusive per target domain.

``BrokerClient`` (acquire / renew / release / heartbeats over one Lease stream) and, in
``proxybroker_client.scrapy_middleware``, a Scrapy downloader middleware. The generated stubs
are in ``proxybroker_client.gen.proxybroker.v1`` (regenerate with ``clients/python/generate.sh``).
"""

from .client import AcquireFuture, BrokerClient, default_worker_id
from .errors import BrokerError, BrokerUnavailable, LeaseLost, NoProxyAvailable
from .lease import Lease
from .wire import OUTCOME_KINDS

__all__ = [
    "AcquireFuture",
    "BrokerClient",
    "BrokerError",
    "BrokerUnavailable",
    "Lease",
    "LeaseLost",
    "NoProxyAvailable",
    "OUTCOME_KINDS",
    "default_worker_id",
]
