--[[
  acquireLease: try to grant one lease now (docs/store-semantics.md §acquire; G1, G2, G4, G7,
  sticky sessions). One call per acquire; its cost does not grow with the pool while most of it
  is free: at most 8 random probes of the top band, then a scan of the band in at most 4
  windows of 256 entries (one ZRANGE and one ZMSCORE each), so that a band of up to 1,024
  entries is read whole.

  KEYS: list `acquireKeys` (the order: src/store/redis/script-keys.ts):
    meta        `P m`             pool meta hash: pv policy counter (absent = "0"), ep epoch
                                  (absent = ""), es grants held until (epoch ms), qn earliest
                                  quarantine return
    quarantine  `P q`             quarantine zset (id → until)
    index       `P idx`           ACTIVE index (id → −score)
    candidates  tier index        `P idx:t:<tier>` for a tier request, else `P idx` (a labels
                                  request may choose a label index instead)
    busy        `P b:<dk>`        busy index of the domain-key (id → blockedUntil; entries <= now
                                  are stale and ignored, dropped by 1 call in 16)
    workers     `P ws`            workers: zset worker id → last seen (epoch ms), bounded
                                  (includes/workers.lua)
    session     `P s:<session>`   session binding "<until>:<id>" (any key of the pool when no session)
  where P = "<prefix>:{<pool>}:".

  ARGV: the arguments of list `acquire` (src/store/redis/script-args.ts says what each means),
  then now (epoch ms; "" = Redis TIME), then the wanted labels, one needle "\n<k>=<v>\n" each
  (escaped like the records' labels). A grant is kept a minute under (worker id, request id)
  when the request has an id, and a retry of the request gets the same lease while it is held.
  scoreAfterQuarantine and the tombstone minimum are baked into the script (includes/config.lua).

  Keys built in the script (same {pool} tag): `P p:<id>` proxy record, `P r:<dk>:<id>` pair
  (its field h holds the live leases), `P l:<hex>` tombstone of a holder found expired,
  `P idx:t:<tier>` and `P idx:l:<k>=<v>` (label indexes), `P d:<dk>` adaptive pacing of the
  domain-key, `P wf` workers that keep a fallback pool, `P b:<sdk>` and `P r:<sdk>:<id>` of the shadow domain-keys, `P rq:<worker> <request>`
  the lease granted to a request.

  Output (flat array):
    {1, token, expireAt, sessionRebound 0|1, id, url, tier, labels, score, state, latencyEwma,
     successes, failures, lastUsedBy, lastUsedAt, quarantineUntil, quarantineCount, exitIp, lease hex, interval}
                          granted (the hex names the lease: a retried request's is its first's)
    {-4, version}         stale policy version
    {-5, retryAfterMs}    no eligible proxy (-1 = unknown), or grants held after a loss

  Error codes (first element, ScriptCode in errors.ts): -4 StalePolicy, -5 NoProxyAvailable.
  No error reply is raised on purpose.
]]
-- @include "base"
-- @include "proxy"
-- @include "pair"
-- @include "isolation"
-- @include "workers"
-- @include "lately"
-- @include "acquireCore"

local now, nowText, nowUs = storeNow(ARGV[{{argc.acquire}} + 1])
NOW_US = nowUs
return acquireLease(KEYS, 0, ARGV, 0, {{argc.acquire}} + 2, #ARGV, now, nowText)
