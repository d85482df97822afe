--[[
  The acquire step (docs/store-semantics.md §acquire), shared by acquireLease and
  releaseAndAcquire. Needs the includes base, proxy and pair; the numbers in double braces are
  baked in when the script is loaded (includes/config.lua).

  K (the script's KEYS[1..7]): 1 `P m` pool meta hash (pv policy counter, ep epoch, es grants
  held until, qn earliest quarantine return), 2 `P q`, 3 `P idx`, 4 tier index (`P idx:t:<tier>`, or `P idx` for any tier),
  5 `P b:<dk>`, 6 `P ws` (zset worker id → last seen), 7 `P s:<session>` (unused when no
  session).
  A (the script's ARGV[1..ACQUIRE_ARGC]): 1 base `P`, 2 policy version ("<ep>.<pv>"), 3 domain-key, 4 worker
  id, 5 ttlMs, 6 maxConcurrency, 7 minIntervalMs (the policy's), 8 banTtlMs, 9 session key (""
  none), 10 sessionTtlMs, 11 tier ("" any), 12 lease hex, 13 random seed, 14 pacing anchor (r
  after release, g after grant), 15 jitterMs, 16 adaptive (1|0), 17 maxIntervalMs (the cap),
  18 shadow domain-keys joined by "\n" ("" none), 19 request id ("" none: no retry log),
  20 proxy id ("" any: else grant only that proxy), 21 fallback pool (1|0; "-" = the worker was
  recorded as seen moments ago: leave its last-seen time), 22 the caller's
  authenticated name ("" = none: the worker id is recorded as last_used_by); the wanted labels
  as needles "\nk=v\n" are A[lf..] (lf: from the caller).
  Functions take K and A as parameters rather than upvalues, and the scripts pass KEYS and ARGV
  themselves: creating a closure costs per captured upvalue, on every call.
  Keys built here (same `{pool}` tag): `P p:<id>` proxy, `P r:<dk>:<id>` pair (whose holders
  are the live lease records), `P l:<hex>` tombstone of a lease found expired,
  `P idx:t:<tier>` and `P idx:l:<k>=<v>` (label indexes: candidates of a labels request, and
  those of a proxy returning from quarantine), `P d:<dk>` the domain-key's adaptive pacing,
  `P b:<sdk>` and `P r:<sdk>:<id>` of the shadow domain-keys, `P rsv` the reservations (proxy id
  → the silent worker that alone may be granted it), `P wf` (zset: workers that keep a fallback
  pool → when they last said so), `P rq:<worker> <request id>` the
  lease granted to a request ("<hex> <id> <token> <granted at>", a minute: a retry gets the same
  lease).

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
local ACQUIRE_ARGC = 22
-- How long the lease granted to a request answers a retry of it.
local REQUEST_MEMORY_MS = 60000
-- The store clock in µs (fencing tokens); the script sets it from storeNow before acquiring.
local NOW_US = 0
local BAND_MIN = 16
local PROBES = 8
local SCAN_WINDOW = 256
local SCAN_WINDOWS = 4
local QUARANTINE_RETURNS = 16
local SESSION_GC_MS = 600000
local BUSY_GC_ONE_IN = 16

-- Step 2: return due QUARANTINED proxies to ACTIVE, with scoreAfterQuarantine or their own
-- score when higher (a proxy an admin banned for a while keeps its score).
local function returnFromQuarantine(K, base, nowText)
  local due = redis.call('ZRANGEBYSCORE', K[2], '-inf', nowText, 'LIMIT', 0, QUARANTINE_RETURNS)
  for i = 1, #due do
    local key = base .. 'p:' .. due[i]
    local v = redis.call('HMGET', key, 'st', 't', 'l', 's')
    if v[1] == 'Q' then
      local score = math.max(tonumber(v[4]) or 0, {{scoreAfterQuarantine}})
      redis.call('HSET', key, 's', score, 'st', 'A', 'qu', 0)
      indexAdd(base, K[3], v[2], v[3], score, due[i])
    end
  end
  if #due > 0 then redis.call('ZREM', K[2], unpack(due)) end
  quarantineNext(K[1], K[2])
end

-- Until when proxy `id` is busy under one of the shadow domain-keys (0 = idle under all).
local function shadowsUntil(A, now, id, shadows)
  if not shadows then return 0 end
  local at = 0
  for i = 1, #shadows do
    local s = shadowUntil(A[1], shadows[i], id, now)
    if s > at then at = s end
  end
  return at
end

-- Step 8: grant proxy `id` under maxConcurrency `mc`. `pk` is its pair key, `pr` the pair
-- fields u h f m bt x g p e (the caller checked there is room); `adapt` the domain-key's
-- adaptive interval.
local function grantLease(K, A, now, nowText, id, pk, pr, rebound, mc, busyN, adapt)
  local base, dk, ttlText = A[1], A[3], A[5]
  local exp = now + tonumber(ttlText)
  local kept, count, first, gone = scanHolders(pr[2], now, nil)
  if gone then tombstoneGone(base, dk, id, gone) end
  -- G4: max(previous + 1, now in µs): increasing even after the store lost the pair's state
  local token = math.max((tonumber(pr[3]) or 0) + 1, NOW_US)
  -- each number formatted once (formatting one costs about as much as a redis.call)
  local tokenText, expText = string.format('%d', token), string.format('%d', exp)
  local holders = kept .. A[12] .. '=' .. expText .. '=' .. tokenText .. '=' .. ttlText .. ';'
  -- G2: the interval of this grant, and what an end of the lease adds to it
  local minInterval = tonumber(A[7])
  local baseInterval = minInterval
  if A[16] == '1' and adapt > baseInterval then baseInterval = adapt end
  local interval = baseInterval
  local jitter = tonumber(A[15])
  if jitter > 0 then interval = interval + math.random(0, jitter) end
  -- the g field: the gap after an end with the "release" anchor, -1 with "grant"
  local gField, gap = -1, 0
  if A[14] == 'r' then gField, gap = interval, interval end
  -- (the policy's own text when the interval is the policy's: no number formatted)
  local pacing
  if baseInterval == minInterval then
    pacing = A[7] .. ':' .. A[7] .. ':' .. A[17] .. ':' .. A[16]
  else
    pacing = baseInterval .. ':' .. minInterval .. ':' .. A[17] .. ':' .. A[16]
  end
  local u = tonumber(pr[1]) or 0
  if interval > 0 then u = math.max(u, now + interval) end
  local gcUntil = pairGcDue(pr[6], math.max(now, u))
  local set = {'f', tokenText, 'h', holders, 'e', nowText}
  if interval > 0 then set[7], set[8], set[9], set[10] = 'n', now + interval, 'u', u end
  if pr[4] ~= A[6] then
    set[#set + 1] = 'm'
    set[#set + 1] = A[6]
  end
  if pr[5] ~= A[8] then
    set[#set + 1] = 'bt'
    set[#set + 1] = A[8]
  end
  if (tonumber(pr[7]) or 0) ~= gField then
    set[#set + 1] = 'g'
    set[#set + 1] = gField
  end
  if pr[8] ~= pacing then
    set[#set + 1] = 'p'
    set[#set + 1] = pacing
  end
  if gcUntil then
    set[#set + 1] = 'x'
    set[#set + 1] = gcUntil
  end
  redis.call('HSET', pk, unpack(set))
  if gcUntil then redis.call('PEXPIRE', pk, gcUntil - now) end
  -- blockedUntil with the new holder and the request's maxConcurrency as the pair's cap
  local bu = u
  if count + 1 >= mc then
    if count == 0 or exp < first then first = exp end
    if first + gap > bu then bu = first + gap end
  end
  if bu > now then
    redis.call('ZADD', K[5], bu == exp and expText or bu, id)
    -- a new busy key gets its GC TTL; a busy one is refreshed now and then
    if busyN == 0 or math.random(64) == 1 then redis.call('PEXPIRE', K[5], bu - now + DAY_MS) end
  end
  local key = base .. 'p:' .. id
  local by = A[22]
  if by == '' then by = A[4] end
  redis.call('HSET', key, 'lb', by, 'la', nowText)
  if A[9] ~= '' then
    local sttl = tonumber(A[10])
    redis.call('SET', K[7], (now + sttl) .. ':' .. id, 'PX', sttl + SESSION_GC_MS)
  end
  if A[19] ~= '' then
    -- the grant time as text (a number formatted costs about as much as a redis.call)
    local record = A[12] .. ' ' .. id .. ' ' .. tokenText .. ' ' .. nowText
    redis.call('SET', base .. 'rq:' .. A[4] .. ' ' .. A[19], record, 'PX', REQUEST_MEMORY_MS)
  end
  local v = redis.call('HMGET', key, 'u', 't', 'l', 's', 'st', 'lt', 'sc', 'fc', 'qu', 'qc')
  return {1, token, exp, rebound, id, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], by, now, v[9], v[10], A[12]}
end

-- The lease a retried request was granted before, while it is held: its grant reply again.
local function grantedBefore(A, now)
  local prev = redis.call('GET', A[1] .. 'rq:' .. A[4] .. ' ' .. A[19])
  if not prev then return nil end
  local hex, id, token, grantedAt = string.match(prev, '^(%x+) (.+) (%d+) (%d+)$')
  if not hex or now - tonumber(grantedAt) >= REQUEST_MEMORY_MS then return nil end
  local pr = redis.call('HMGET', A[1] .. 'r:' .. A[3] .. ':' .. id, 'h')
  local _, _, _, _, mine = scanHolders(pr[1], now, hex)
  if not mine then return nil end
  local e, t = string.match(mine, '^%x+=(%d+)=(%d+)=%d+;$')
  if t ~= token or tonumber(e) <= now then return nil end
  local v = redis.call('HMGET', A[1] .. 'p:' .. id, 'u', 't', 'l', 's', 'st', 'lt', 'sc', 'fc', 'lb', 'la', 'qu', 'qc')
  if not v[1] then return nil end
  return {1, tonumber(token), tonumber(e), 0, id, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], tonumber(v[10]), v[11], v[12], hex}
end

-- Whether proxy `id` is reserved for another worker (one that may use it from its fallback pool):
-- `rsv` is the reservations key when the pool has any, else nil (no read).
local function reservedForOther(A, rsv, id)
  if not rsv then return false end
  local owner = redis.call('HGET', rsv, id)
  return owner and owner ~= A[4]
end

-- The pair of `id` when it is eligible (not blocked, no holder ended within its gap, fewer live
-- holders than both its own cap and the request's `mc`, and its anchor `cur` — the domain-key's
-- interval now — in the past), else nil: (pair key, fields u h f m bt x g p e). A pair held back
-- only by `cur` answers nil and when that ends (the busy index does not show it).
local function eligiblePair(A, now, id, mc, cur)
  local pk = A[1] .. 'r:' .. A[3] .. ':' .. id
  local pr = redis.call('HMGET', pk, 'u', 'h', 'f', 'm', 'bt', 'x', 'g', 'p', 'e')
  if pr[1] and tonumber(pr[1]) > now then return nil end
  local anchor = tonumber(pr[9]) or 0
  if pr[2] and pr[2] ~= '' then
    local _, count, _, _, _, goneMax = scanHolders(pr[2], now, nil)
    local gap, byEnd = gapOf(pr[7])
    if goneMax > 0 and goneMax + gap > now then return nil end
    if count >= mc or count >= (tonumber(pr[4]) or 1) then return nil end
    if byEnd and goneMax > anchor then anchor = goneMax end
  end
  if anchor > 0 and anchor + cur > now then return nil, anchor + cur end
  return pk, pr
end

-- Whether proxy `id` has the wanted tier and labels (`needles`, nil when none: no read; the
-- candidate index then guarantees the tier).
local function matchesRequest(A, id, needles)
  if not needles then return true end
  local v = redis.call('HMGET', A[1] .. 'p:' .. id, 't', 'l')
  if A[11] ~= '' and v[1] ~= A[11] then return false end
  return labelsMatch(v[2], needles)
end

-- A request bound to one proxy `b` (its session's, or A[20]): a reply (grant, or denial with when
-- it frees), or nil when `b` cannot serve it at all (not ACTIVE, another tier, labels, banned).
local function fromBound(K, A, now, nowText, b, needles, mc, busyN, adapt, cur, shadows, rsv)
  if reservedForOther(A, rsv, b) then return {-5, -1} end
  local v = redis.call('HMGET', A[1] .. 'p:' .. b, 'st', 't', 'l')
  if v[1] == 'A' and (A[11] == '' or v[2] == A[11]) and (not needles or labelsMatch(v[3], needles)) then
    local pk = A[1] .. 'r:' .. A[3] .. ':' .. b
    local pr = redis.call('HMGET', pk, 'u', 'h', 'f', 'm', 'bt', 'x', 'g', 'p', 'e', 'b')
    if (tonumber(pr[10]) or 0) <= now then
      local gap, byEnd = gapOf(pr[7])
      local at = tonumber(pr[1]) or 0
      local anchor = tonumber(pr[9]) or 0
      local _, count, first, _, _, goneMax = scanHolders(pr[2], now, nil)
      if goneMax > 0 then at = math.max(at, goneMax + gap) end
      if byEnd and goneMax > anchor then anchor = goneMax end
      if anchor > 0 then at = math.max(at, anchor + cur) end
      if count >= mc or count >= (tonumber(pr[4]) or 1) then at = math.max(at, first + gap) end
      at = math.max(at, shadowsUntil(A, now, b, shadows))
      if at <= now then return grantLease(K, A, now, nowText, b, pk, pr, 0, mc, busyN, adapt) end
      return {-5, at - now}
    end
  end
  return nil
end

-- Step 5: the session's bound proxy. Answers a reply (grant or denial), or nil to choose, with
-- whether that choice is a rebind.
local function fromSession(K, A, now, nowText, needles, mc, busyN, adapt, cur, shadows, rsv)
  local s = redis.call('GET', K[7])
  if not s then return nil, 0 end
  local sexp, b = string.match(s, '^(%d+):(.*)$')
  if not sexp or tonumber(sexp) <= now then return nil, 0 end
  local r = fromBound(K, A, now, nowText, b, needles, mc, busyN, adapt, cur, shadows, rsv)
  if r then return r, 0 end
  return nil, 1
end

-- Step 7: when an eligible proxy is known to appear. With no candidates at all, the earliest
-- quarantine return (busy entries then belong to proxies out of the list); otherwise the
-- earliest busy entry of the domain-key; -1 when neither is known.
local function retryAfter(K, now, nowText, n)
  local e
  if n == 0 then
    e = redis.call('ZRANGE', K[2], 0, 0, 'WITHSCORES')
  else
    e = redis.call('ZRANGEBYSCORE', K[5], '(' .. nowText, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  end
  if #e == 0 then return -1 end
  return math.max(0, tonumber(e[2]) - now)
end

-- Step 6's candidate index: the tier's (or the whole) index, or the smallest label index of a
-- labels request when it is smaller. Answers the key and its size when it was counted (or nil).
local function candidateIndex(K, A, needles)
  if not needles then return K[4], nil end
  local best, bestN = nil, nil
  if A[11] ~= '' then best, bestN = K[4], redis.call('ZCARD', K[4]) end
  for i = 1, #needles do
    local key = labelIndex(A[1], needles[i])
    local n = redis.call('ZCARD', key)
    if not bestN or n < bestN then best, bestN = key, n end
  end
  return best, bestN
end

-- The whole acquire; the wanted labels are A[lf..]. The script sets NOW_US (the store clock in
-- µs) first.
local function acquireLease(K, A, lf, now, nowText)
  math.randomseed(tonumber(A[13]))
  local meta = redis.call('HMGET', K[1], 'pv', 'qn', 'ep', 'es')
  local pv = (meta[3] or '') .. '.' .. (meta[1] or '0')
  if pv ~= A[2] then return {-4, pv} end
  -- after a loss of state, nothing until leases from before can no longer be in use
  if meta[4] and tonumber(meta[4]) > now then return {-5, tonumber(meta[4]) - now} end
  if A[19] ~= '' then
    local again = grantedBefore(A, now)
    if again then return again end
  end
  if meta[2] and tonumber(meta[2]) <= now then returnFromQuarantine(K, A[1], nowText) end
  local busy = K[5]
  if math.random(BUSY_GC_ONE_IN) == 1 then redis.call('ZREMRANGEBYSCORE', busy, '-inf', nowText) end
  -- the worker is seen (a worker that keeps a fallback pool is recorded as such too; "-": recorded
  -- moments ago). Not before: an acquire answered stale or held (after a loss of state) does not
  -- count as the worker being back, so a silent worker's share stays reserved until its first
  -- real answer, which starts the hand-over of its fallback leases
  if A[21] ~= '-' then seeWorker(K[6], A[1] .. 'wf', A[4], A[21] == '1', now, nowText) end
  local needles = nil
  if #A >= lf then
    needles = {}
    for i = lf, #A do needles[#needles + 1] = A[i] end
  end
  local shadows = nil
  if A[18] ~= '' then
    shadows = {}
    for sdk in string.gmatch(A[18], '[^\n]+') do shadows[#shadows + 1] = sdk end
  end
  local adapt = 0
  if A[16] == '1' then adapt = tonumber(redis.call('HGET', A[1] .. 'd:' .. A[3], 'a')) or 0 end
  -- the domain-key's interval now, before jitter
  local cur = tonumber(A[7])
  if adapt > cur then cur = adapt end
  local mc = tonumber(A[6])
  local busyN = redis.call('ZCOUNT', busy, '(' .. nowText, '+inf')
  -- proxies reserved for silent workers (their fallback pools may be using them)
  local rsv = A[1] .. 'rsv'
  if redis.call('EXISTS', rsv) == 0 then rsv = nil end
  if A[20] ~= '' then
    return fromBound(K, A, now, nowText, A[20], needles, mc, busyN, adapt, cur, shadows, rsv) or {-5, -1}
  end
  local rebound = 0
  if A[9] ~= '' then
    local r
    r, rebound = fromSession(K, A, now, nowText, needles, mc, busyN, adapt, cur, shadows, rsv)
    if r then return r end
  end
  -- Step 6: up to PROBES random positions of the top band, then a scan of the band.
  local cand, n = candidateIndex(K, A, needles)
  local band = BAND_MIN + 2 * busyN
  if n then band = math.min(band, n) end
  local tried = nil
  local probes = 0
  -- the earliest moment a candidate held back by what the busy index does not show (the
  -- domain-key's interval now, a shadow domain-key) frees up (0 = none seen)
  local freeAt = 0
  while probes < PROBES and band > 0 do
    local r = math.random(band) - 1
    if tried and tried[r] then
      probes = probes + 1
    else
      local ids = redis.call('ZRANGE', cand, r, r)
      if #ids == 0 then
        -- past the end: learn the index size (only small pools get here) and draw again
        if n then break end
        n = redis.call('ZCARD', cand)
        if n == 0 then break end
        band = math.min(band, n)
      else
        probes = probes + 1
        local id = ids[1]
        local pk, pr = eligiblePair(A, now, id, mc, cur)
        local su = 0
        if pk and matchesRequest(A, id, needles) and not reservedForOther(A, rsv, id) then
          su = shadowsUntil(A, now, id, shadows)
          if su == 0 then return grantLease(K, A, now, nowText, id, pk, pr, rebound, mc, busyN, adapt) end
        elseif not pk and pr and matchesRequest(A, id, needles) then
          su = pr
        end
        if su > 0 and (freeAt == 0 or su < freeAt) then freeAt = su end
        tried = tried or {}
        tried[r] = true
      end
    end
  end
  if not n then n = redis.call('ZCARD', cand) end
  band = math.min(band, n)
  if band > 0 then
    -- the band from a random start, wrapping, in windows: one ZRANGE (two when it wraps) and
    -- one ZMSCORE against the busy index each; a band of up to SCAN_WINDOW * SCAN_WINDOWS
    -- entries is read whole
    local start = math.random(band) - 1
    local limit = math.min(band, SCAN_WINDOW * SCAN_WINDOWS)
    local offset = 0
    while offset < limit do
      local pos = (start + offset) % band
      local count = math.min(SCAN_WINDOW, limit - offset)
      local ids = redis.call('ZRANGE', cand, pos, math.min(pos + count, band) - 1)
      if #ids < count then
        local more = redis.call('ZRANGE', cand, 0, count - #ids - 1)
        for i = 1, #more do ids[#ids + 1] = more[i] end
      end
      local scores = redis.call('ZMSCORE', busy, unpack(ids))
      for j = 1, #ids do
        if not (tried and tried[(pos + j - 1) % band]) and not (scores[j] and tonumber(scores[j]) > now) then
          local id = ids[j]
          local pk, pr = eligiblePair(A, now, id, mc, cur)
          local su = 0
          if pk and matchesRequest(A, id, needles) and not reservedForOther(A, rsv, id) then
            su = shadowsUntil(A, now, id, shadows)
            if su == 0 then return grantLease(K, A, now, nowText, id, pk, pr, rebound, mc, busyN, adapt) end
          elseif not pk and pr and matchesRequest(A, id, needles) then
            su = pr
          end
          if su > 0 and (freeAt == 0 or su < freeAt) then freeAt = su end
        end
      end
      offset = offset + count
    end
  end
  local known = retryAfter(K, now, nowText, n)
  if freeAt > 0 and (known < 0 or freeAt - now < known) then known = freeAt - now end
  return {-5, known}
end
