"""Run by test_silence in a subprocess: ProxyBrokerMiddleware.process_request for N requests in a
running Twisted reactor, and how each ended.

argv: broker address, N, request timeout (s), max wait (s), silent_after (s), run for (s). Prints
one JSON list on stdout (per request: "leased" or the error's class name); Twisted's log (its
unhandled errors, e.g. a Deferred fired twice) goes to stderr.
"""

import json
import sys

from scrapy import Request
from twisted.internet import reactor
from twisted.python import log

from proxybroker_client import BrokerClient
from proxybroker_client.scrapy_middleware import ProxyBrokerMiddleware

address = sys.argv[1]
count = int(sys.argv[2])
request_timeout, max_wait, silent_after, run_for = (float(a) for a in sys.argv[3:7])

log.startLogging(sys.stderr, setStdout=False)
client = BrokerClient(address, worker_id="py-mw-acquires", request_timeout=request_timeout, silent_after=silent_after)
mw = ProxyBrokerMiddleware(client, max_wait=max_wait, ttl=10)
results = []


def start() -> None:
    for i in range(count):
        d = mw.process_request(Request(f"http://m{i}.example.com/"), None)
        d.addCallbacks(lambda _: results.append("leased"), lambda f: results.append(type(f.value).__name__))


def stop() -> None:
    client.close(abandon=False)
    reactor.stop()


reactor.callWhenRunning(start)
reactor.callLater(run_for, stop)
reactor.run()
print(json.dumps(results))
