#!/usr/bin/env bash
# `npm run crawl:partition`: the two silent partitions the contract promises to survive (docs/failures.md),
# gated, each a crawl of its own with 2 TypeScript SDK workers and 1 Python Scrapy worker beside them,
# the first TypeScript worker cut off the broker by a relay that drops every byte, sockets open:
#  - at 20 s of 40 s, a worker long past its fallback readiness: from 8 s after the cut the fleet
#    (the cut worker from its fallback pool) keeps at least 0.8 of its pages/s before the cut;
#  - at 3 s of 28 s, a worker not ready to fall back yet: nothing is reserved for it, and the
#    others carry the crawl at an efficiency of at least 0.6.
# Both: no second without a page, no 429 on a site with a policy, no ban, no overlap (CRAWL_GATE).
set -euo pipefail
cd "$(dirname "$0")/.."
# CRAWL_PARTITION_FLEET=sdk (`npm run crawl:partition:sdk`): the same two cuts on the fleet the
# silent-worker regression was found on, 2 TypeScript SDK workers × 4 loops and nothing else, sites
# at 340 ms, 6 proxies (its figures: docs/benchmarks.md).
if [ "${CRAWL_PARTITION_FLEET:-}" = sdk ]; then
  fleet=(CRAWL_WORKERS=2 CRAWL_PYTHON_WORKERS=0 CRAWL_CONCURRENCY=4 CRAWL_MIN_INTERVAL_MS=340 CRAWL_PROXIES=6)
else
  fleet=(CRAWL_WORKERS=3 CRAWL_PYTHON_WORKERS=1)
fi
run() {
  env CRAWL_STRATEGIES=proxybroker "${fleet[@]}" CRAWL_LONG=0 CRAWL_GATE=1 "$@" \
    node --conditions=@proxybroker/source --import tsx crawl/run.ts
}
# The fleet's speed from 8 s after a cut at 20 s spreads over 0.77–0.93× from run to run (the cut
# worker's first fallback page comes 8.4–8.8 s after the cut, and its share of the proxies varies):
# when speed is all that failed, the run is repeated once and the second must pass. A failure of
# safety (an overlap, a ban, a 429 on a site with a policy, a second without a page) is never repeated.
out=$(mktemp)
if ! run env CRAWL_SECONDS=40 CRAWL_PARTITION_AT_S=20 CRAWL_PARTITION_MIN_RATIO=0.8 | tee "$out"; then
  if grep -qx 'CRAWL_GATE: ProxyBroker failed: pages/s from 8 s after the partition [0-9.]*× of before it (at least 0.8×)' "$out"; then
    echo "crawl:partition: only the fleet's speed fell short; once more"
    run env CRAWL_SECONDS=40 CRAWL_PARTITION_AT_S=20 CRAWL_PARTITION_MIN_RATIO=0.8
  else
    rm -f "$out"
    exit 1
  fi
fi
rm -f "$out"
run env CRAWL_SECONDS=28 CRAWL_PARTITION_AT_S=3 CRAWL_PARTITION_MIN_EFFICIENCY=0.6
