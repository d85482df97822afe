--[[
  acquireLease: try to grant one lease now (docs/store-semantics.md §acquire; G1, G2, G4, G7,
  sticky sessions). One call per acquire; its cost does not grow with the pool while most of it
  is free: at most 8 random probes of the top band, then a scan of the band in at most 4
  windows of 256 entries (one ZRANGE and one ZMSCORE each), so that a band of up to 1,024
  entries is read whole.

  KEYS[1] `P m`             pool meta hash: pv policy counter (absent = "0"), ep epoch
                            (absent = ""), es grants held until (epoch ms), qn earliest
                            quarantine return
  KEYS[2] `P q`             quarantine zset (id → until)
  KEYS[3] `P idx`           ACTIVE index (id → −score)
  KEYS[4] tier index        `P idx:t:<tier>` for a tier request, else `P idx` (a labels
                            request may choose a label index instead)
  KEYS[5] `P b:<dk>`        busy index of the domain-key (id → blockedUntil; entries <= now
                            are stale and ignored, dropped by 1 call in 16)
  KEYS[6] `P ws`            workers: zset worker id → last seen (epoch ms), bounded
                            (includes/workers.lua)
  KEYS[7] `P s:<session>`   session binding "<until>:<id>" (any key of the pool when no session)
  where P = "<prefix>:{<pool>}:".

  ARGV[1] P
  ARGV[2] policy version the request was resolved with: "<ep>.<pv>"
  ARGV[3] domain-key
  ARGV[4] worker id
  ARGV[5] ttlMs
  ARGV[6] maxConcurrency
  ARGV[7] minIntervalMs (the policy's; adaptive pacing never goes below it)
  ARGV[8] banTtlMs
  ARGV[9] session key ("" = none)
  ARGV[10] sessionTtlMs
  ARGV[11] tier ("" = any)
  ARGV[12] lease hex (32 random hex digits; the lease's holder entry in its pair)
  ARGV[13] random seed (integer)
  ARGV[14] pacing anchor: r (after the previous lease ended) or g (after its grant)
  ARGV[15] jitterMs (0 = none)
  ARGV[16] adaptive pacing: 1 on, 0 off
  ARGV[17] maxIntervalMs (the adaptive cap)
  ARGV[18] shadow domain-keys (earlier keys of the host) joined by "\n"; "" = none
  ARGV[19] request id ("" = none): a grant is kept a minute under (worker id, request id), and a
           retry of the request gets the same lease while it is held
  ARGV[20] proxy id ("" = any; else only that proxy is granted, or nothing)
  ARGV[21] 1: the worker keeps a fallback pool (recorded in `P wf`), else 0
  ARGV[22] the caller's authenticated name ("" = none): recorded as the proxy's last_used_by
           instead of the worker id
  ARGV[23] now (epoch ms; "" = Redis TIME)
  ARGV[24..] wanted labels, one needle "\n<k>=<v>\n" each (escaped like the records' labels)
  scoreAfterQuarantine and the tombstone minimum are baked into the script (includes/config.lua).

  Keys built in the script (same {pool} tag): `P p:<id>` proxy record, `P r:<dk>:<id>` pair
  (its field h holds the live leases), `P l:<hex>` tombstone of a holder found expired,
  `P idx:t:<tier>` and `P idx:l:<k>=<v>` (label indexes), `P d:<dk>` adaptive pacing of the
  domain-key, `P wf` workers that keep a fallback pool, `P b:<sdk>` and `P r:<sdk>:<id>` of the shadow domain-keys, `P rq:<worker> <request>`
  the lease granted to a request.

  Output (flat array):
    {1, token, expireAt, sessionRebound 0|1, id, url, tier, labels, score, state, latencyEwma,
     successes, failures, lastUsedBy, lastUsedAt, quarantineUntil, quarantineCount, lease hex}
                          granted (the hex names the lease: a retried request's is its first's)
    {-4, version}         stale policy version
    {-5, retryAfterMs}    no eligible proxy (-1 = unknown), or grants held after a loss

  Error codes (first element, ScriptCode in errors.ts): -4 StalePolicy, -5 NoProxyAvailable.
  No error reply is raised on purpose.
]]
-- @include "base"
-- @include "proxy"
-- @include "pair"
-- @include "workers"
-- @include "acquireCore"

local now, nowText, nowUs = storeNow(ARGV[ACQUIRE_ARGC + 1])
NOW_US = nowUs
return acquireLease(KEYS, ARGV, ACQUIRE_ARGC + 2, now, nowText)
