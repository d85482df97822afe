--[[
  The acquire (docs/store-semantics.md §acquire), shared by acquireLease, releaseAndAcquire and
  leaseBatch: acquireLease below runs its steps in order, one include each, named as the steps of
  the doc and as the functions of the memory engine's acquire (sdk/src/engine/memory/acquire.ts).
  Needs the includes base, proxy, pair, workers, lately and isolation; the numbers in double
  braces are baked in when the script is loaded (includes/config.lua).

  K: the script's KEYS, whose keys of list `acquireKeys` (src/store/redis/script-keys.ts) start
  after K[ko]: meta `P m` (pv policy counter, ep epoch, es grants held until, qn earliest
  quarantine return, lt and lta the longest TTL lately), quarantine `P q`, index `P idx`, candidates (`P idx:t:<tier>`, or `P idx`
  for any tier), busy `P b:<dk>`, workers `P ws` (zset worker id → last seen), session
  `P s:<session>` (unused when no session).
  A: the script's ARGV, whose arguments of list `acquire` (src/store/redis/script-args.ts, which
  says what each means) start after A[ao]; the wanted labels as needles "\nk=v\n" are A[lf..le]
  (from the caller).
  readRequest binds the keys and arguments by name in one table, q, which every step takes (and
  some add to: what later steps read); the steps' helpers take what they need as parameters rather
  than upvalues, as the scripts pass KEYS and ARGV themselves: creating a closure costs per
  captured upvalue, on every call.
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
             quarantineCount, lease hex}
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

-- The request the steps read and add to (q): its keys after K[ko] and its arguments after A[ao],
-- by name (lists `acquireKeys` and `acquire`), the script's ARGV (A) with the wanted labels at
-- A[lf..le] (none when lf > le), and the store clock. The keys and arguments are read in place (a
-- batch passes offsets, not copies). Seeds the random numbers with the request's seed.
local function readRequest(K, ko, A, ao, lf, le, now, nowText)
  math.randomseed(tonumber(A[ao + {{acquire.seed}}]))
  return {
    now = now,
    nowText = nowText,
    A = A,
    lf = lf,
    le = le,
    rebound = 0,
    metaKey = K[ko + {{acquireKeys.meta}}],
    quarantineKey = K[ko + {{acquireKeys.quarantine}}],
    indexKey = K[ko + {{acquireKeys.index}}],
    candidates = K[ko + {{acquireKeys.candidates}}],
    busy = K[ko + {{acquireKeys.busy}}],
    workersKey = K[ko + {{acquireKeys.workers}}],
    binding = K[ko + {{acquireKeys.session}}],
    base = A[ao + {{acquire.base}}],
    policyVersion = A[ao + {{acquire.policyVersion}}],
    dk = A[ao + {{acquire.domainKey}}],
    worker = A[ao + {{acquire.workerId}}],
    ttlMs = A[ao + {{acquire.ttlMs}}],
    maxConcurrency = A[ao + {{acquire.maxConcurrency}}],
    minIntervalMs = A[ao + {{acquire.minIntervalMs}}],
    banTtlMs = A[ao + {{acquire.banTtlMs}}],
    sessionKey = A[ao + {{acquire.sessionKey}}],
    sessionTtlMs = A[ao + {{acquire.sessionTtlMs}}],
    tier = A[ao + {{acquire.tier}}],
    hex = A[ao + {{acquire.hex}}],
    anchor = A[ao + {{acquire.anchor}}],
    jitterMs = A[ao + {{acquire.jitterMs}}],
    adaptive = A[ao + {{acquire.adaptive}}],
    maxIntervalMs = A[ao + {{acquire.maxIntervalMs}}],
    shadowKeys = A[ao + {{acquire.shadowKeys}}],
    requestId = A[ao + {{acquire.requestId}}],
    proxyId = A[ao + {{acquire.proxyId}}],
    fallbackPool = A[ao + {{acquire.fallbackPool}}],
    yieldsLeases = A[ao + {{acquire.yieldsLeases}}],
    identity = A[ao + {{acquire.identity}}],
    domainUseMs = A[ao + {{acquire.domainUseMs}}],
    group = A[ao + {{acquire.isolationGroup}}],
    affinity = A[ao + {{acquire.affinityMs}}],
    formerGroups = A[ao + {{acquire.formerGroups}}],
    joinedKeys = A[ao + {{acquire.joinedKeys}}],
  }
end

-- The whole acquire: its keys after K[ko], its arguments after A[ao], its wanted labels
-- A[lf..le] (none when lf > le). The script sets NOW_US (the store clock in µs) first. The steps
-- of docs/store-semantics.md §acquire, in order; a step that answers a reply ends the acquire.
local function acquireLease(K, ko, A, ao, lf, le, now, nowText)
  local q = readRequest(K, ko, A, ao, lf, le, now, nowText)
  local reply = checkVersion(q)
  if reply then return reply end
  reply = replayRequest(q)
  if reply then return reply end
  returnQuarantined(q)
  dropStaleBusy(q)
  reply = admitWorker(q)
  if reply then return reply end
  prepareChoice(q)
  local id, pk, pr, denied = pickBound(q)
  if denied then return denied end
  if not id then
    local n, freeAt
    id, pk, pr, n, freeAt = pickCandidate(q)
    if not id then return deny(q, n, freeAt) end
  end
  return grant(q, id, pk, pr)
end
