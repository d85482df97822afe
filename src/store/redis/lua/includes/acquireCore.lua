--[[
  The acquire (docs/store-semantics.md §acquire), shared by acquireLease, releaseAndAcquire and
  leaseBatch: acquireLease below runs its steps in order, one include each, named as the steps of
  the doc and as the functions of the memory engine's acquire (sdk/src/engine/memory/acquire.ts).
  Needs the includes base, proxy, pair, workers, lately and isolation; the numbers in double
  braces are baked in when the script is loaded (includes/config.lua).

  K: the script's KEYS, whose keys of list `acquireKeys` (src/store/redis/script-keys.ts) start
  after K[ko]: meta `P m` (pv policy counter, ep epoch, es grants held until, qn earliest
  quarantine return, lt and lta the longest TTL lately, xs 1 once exits matter: includes/exits.lua), quarantine `P q`, index `P idx`, candidates (`P idx:t:<tier>`, or `P idx`
  for any tier), busy `P b:<dk>`, workers `P ws` (zset worker id → last seen), session
  `P s:<session>` (unused when no session).
  A: the script's ARGV, whose arguments of list `acquire` (src/store/redis/script-args.ts, which
  says what each means) start after A[ao]; the wanted labels as needles "\nk=v\n" are A[lf..le]
  (from the caller).
  acquireLease binds them to named locals and passes each step what it reads; a step answers
  what later steps read. Functions take the keys and arguments they need as parameters rather
  than upvalues (and no table gathers them), and the scripts pass KEYS and ARGV themselves:
  creating a closure costs per captured upvalue, and a table per allocated slot, on every call.
  Keys built here (same `{pool}` tag): `P p:<id>` proxy, `P r:<dk>:<id>` pair (whose holders
  are the live lease records), `P l:<hex>` tombstone of a lease found expired,
  `P idx:t:<tier>` and `P idx:l:<k>=<v>` (label indexes: candidates of a labels request, and
  those of a proxy returning from quarantine), `P d:<dk>` the domain-key's adaptive pacing,
  `P b:<sdk>` and `P r:<sdk>:<id>` of the shadow domain-keys, `P rsv` the reservations (proxy id,
  or "\n" and a domain-key → the silent worker that alone may be granted it), `P wf` (zset:
  workers that keep a fallback pool → when they last said so), `P wy` (zset: workers that yield
  their leases), `P wd` the domain-keys workers used (includes/lately.lua), `P rq:<worker> <request id>` the
  lease granted to a request ("<hex> <id> <token> <granted at>", a minute: a retry gets the same
  lease), and the isolation records `P gh:<group>:<id>` and `P gb:<group>` (includes/isolation.lua).

  The busy index is read as "entries > now": stale entries are invisible, and are dropped from
  time to time (1 acquire in 16) rather than on every call. Eligibility is decided on the pair
  itself (one HMGET, which the grant needs anyway); the busy index sizes the band, lets the
  scan skip blocked candidates with one ZMSCORE, and answers retryAfter.

  Reply (flat array):
    granted {1, token, expireAt, sessionRebound 0|1, id, url, tier, labels, score, state,
             latencyEwma, successes, failures, lastUsedBy, lastUsedAt, quarantineUntil,
             quarantineCount, exitIp, lease hex, interval, ttl}
             (interval: ms this grant sets before the pair's next, jitter included; -1 for
             a retried request's grant, whose interval is not known again; ttl: ms the lease
             runs from now — the TTL asked, or less on a pair reserved from a later moment, or
             the rest of a retried request's lease)
    stale policy {-4, version}
    denied {-5, retryAfterMs}   (-1 = unknown)
]]
-- How long the lease granted to a request answers a retry of it (steps replayRequest and grant).
local REQUEST_MEMORY_MS = 60000
-- The store clock in µs (fencing tokens); the script sets it from storeNow before acquiring.
local NOW_US = 0

-- The steps of the acquire, one include each, in the order acquireLease runs them (the memory
-- engine's sdk/src/engine/memory/acquire.ts has the same steps under the same names), and the
-- eligibility rules two of them share.
-- @include "exits"
-- @include "reservations"
-- @include "eligibility"
-- @include "checkVersion"
-- @include "replayRequest"
-- @include "returnQuarantined"
-- @include "dropStaleBusy"
-- @include "admitWorker"
-- @include "prepareChoice"
-- @include "pickBound"
-- @include "pickCandidate"
-- @include "deny"
-- @include "grant"

-- The whole acquire: its keys after K[ko], its arguments after A[ao], its wanted labels
-- A[lf..le] (none when lf > le). The script sets NOW_US (the store clock in µs) first. The keys
-- and arguments are bound to named locals (read in place: a batch passes offsets, not copies),
-- then the steps of docs/store-semantics.md §acquire run in order; a step that answers a reply
-- ends the acquire.
local function acquireLease(K, ko, A, ao, lf, le, now, nowText)
  local metaKey = K[ko + {{acquireKeys.meta}}]
  local quarantineKey = K[ko + {{acquireKeys.quarantine}}]
  local indexKey = K[ko + {{acquireKeys.index}}]
  local candidates = K[ko + {{acquireKeys.candidates}}]
  local busy = K[ko + {{acquireKeys.busy}}]
  local workersKey = K[ko + {{acquireKeys.workers}}]
  local binding = K[ko + {{acquireKeys.session}}]
  local base = A[ao + {{acquire.base}}]
  local policyVersion = A[ao + {{acquire.policyVersion}}]
  local dk = A[ao + {{acquire.domainKey}}]
  local worker = A[ao + {{acquire.workerId}}]
  local ttlMs = A[ao + {{acquire.ttlMs}}]
  local maxConcurrency = A[ao + {{acquire.maxConcurrency}}]
  local minIntervalMs = A[ao + {{acquire.minIntervalMs}}]
  local banTtlMs = A[ao + {{acquire.banTtlMs}}]
  local sessionKey = A[ao + {{acquire.sessionKey}}]
  local sessionTtlMs = A[ao + {{acquire.sessionTtlMs}}]
  local tier = A[ao + {{acquire.tier}}]
  local hex = A[ao + {{acquire.hex}}]
  local seed = A[ao + {{acquire.seed}}]
  local anchor = A[ao + {{acquire.anchor}}]
  local jitterMs = A[ao + {{acquire.jitterMs}}]
  local adaptive = A[ao + {{acquire.adaptive}}]
  local maxIntervalMs = A[ao + {{acquire.maxIntervalMs}}]
  local shadowKeys = A[ao + {{acquire.shadowKeys}}]
  local requestId = A[ao + {{acquire.requestId}}]
  local proxyId = A[ao + {{acquire.proxyId}}]
  local fallbackPool = A[ao + {{acquire.fallbackPool}}]
  local yieldsLeases = A[ao + {{acquire.yieldsLeases}}]
  local identity = A[ao + {{acquire.identity}}]
  local domainUseMs = A[ao + {{acquire.domainUseMs}}]
  local group = A[ao + {{acquire.isolationGroup}}]
  local affinity = A[ao + {{acquire.affinityMs}}]
  local formerGroups = A[ao + {{acquire.formerGroups}}]
  local joinedKeys = A[ao + {{acquire.joinedKeys}}]
  local grantUnknownExits = A[ao + {{acquire.grantUnknownExits}}]
  local honors = A[ao + {{acquire.honorsTtl}}] == '1'
  math.randomseed(tonumber(seed))

  local reply, meta = checkVersion(metaKey, policyVersion, now)
  if reply then return reply end
  reply = replayRequest(base, dk, worker, requestId, now)
  if reply then return reply end
  returnQuarantined(meta, metaKey, quarantineKey, indexKey, base, now, nowText)
  dropStaleBusy(busy, nowText)
  local rsv
  reply, rsv = admitWorker(base, worker, honors, dk, group, workersKey, fallbackPool, yieldsLeases, domainUseMs, now, nowText)
  if reply then return reply end
  local needles, shadows, iso, cur, mc, busyN, ex, sibN = prepareChoice(A, lf, le, base, dk, busy, nowText, shadowKeys, group,
    formerGroups, joinedKeys, adaptive, minIntervalMs, maxConcurrency, meta, grantUnknownExits)
  local id, pk, pr, rebound
  id, pk, pr, reply, rebound = pickBound(base, dk, tier, worker, honors, now, binding, proxyId, sessionKey, needles, mc, cur,
    shadows, rsv, iso, group, ex)
  if reply then return reply end
  if not id then
    local n, freeAt
    id, pk, pr, n, freeAt = pickCandidate(candidates, busy, base, dk, tier, worker, honors, now, nowText, busyN, mc, cur,
      needles, rsv, shadows, iso, group, ex, sibN)
    if not id then return deny(quarantineKey, busy, now, nowText, n, freeAt) end
  end
  return grant(busy, binding, now, nowText, id, pk, pr, rebound or 0, mc, busyN, cur,
    base, dk, worker, honors, rsv, identity, hex, ttlMs, maxConcurrency, minIntervalMs, maxIntervalMs, adaptive,
    jitterMs, anchor, banTtlMs, sessionKey, sessionTtlMs, requestId, group, affinity, metaKey, meta)
end
