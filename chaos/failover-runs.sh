#!/usr/bin/env bash
# `npm run chaos:failover`: real Redis failovers under the chaos fleet (2 SDK + 2 raw-stub worker
# processes, two broker replicas), one run per setup teams run in production:
#  - CHAOS_REDIS=sentinel: a master with a replica and three Sentinels; the master SIGKILLed, the
#    replica promoted, the old master back as its replica;
#  - CHAOS_REDIS=cluster: a Redis Cluster of three masters with a replica each; the master of the
#    pool's keys SIGKILLed and its replica promoted.
# Worker, broker and gateway kills in between (a gateway worker beside the others). Each run passes when chaos's checks pass (0 overlaps, fencing
# tokens increasing, every proxy back, nothing held at the end) and the fleet was back at 0.8× its
# speed before the kill within 2 s of the end of the broker's hold (chaos/recovery.ts).
# CHAOS_SECONDS (default 90) and CHAOS_SEED pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for topology in sentinel cluster; do
  echo "== chaos:failover, CHAOS_REDIS=$topology"
  CHAOS_REDIS=$topology CHAOS_SECONDS=${CHAOS_SECONDS:-90} CHAOS_FAULTS=redis-failover,worker-kill,broker-kill,gateway-kill \
    CHAOS_FAULT_GAP_MS=${CHAOS_FAULT_GAP_MS:-4000-6000} \
    node --conditions=@proxybroker/source --import tsx chaos/run.ts || status=1
done
exit $status
