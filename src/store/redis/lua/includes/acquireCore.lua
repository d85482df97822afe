--[[
  The acquire step (docs/store-semantics.md §acquire), shared by acquireLease and
  releaseAndAcquire. Needs the includes base, proxy, pair, workers, lately and isolation; the numbers in double braces are
  baked in when the script is loaded (includes/config.lua).

  K: the script's KEYS, whose keys of list `acquireKeys` (src/store/redis/script-keys.ts) start
  after K[ko]: meta `P m` (pv policy counter, ep epoch, es grants held until, qn earliest
  quarantine return, lt and lta the longest TTL lately), quarantine `P q`, index `P idx`, candidates (`P idx:t:<tier>`, or `P idx`
  for any tier), busy `P b:<dk>`, workers `P ws` (zset worker id → last seen), session
  `P s:<session>` (unused when no session); bound to named locals at the top of acquireLease,
  as the arguments are. The keys and arguments are read in place (a batch passes offsets, not
  copies).
  A: the script's ARGV, whose arguments of list `acquire` (src/store/redis/script-args.ts, which
  says what each means) start after A[ao], bound to named locals at the top of acquireLease; the
  wanted labels as needles "\nk=v\n" are A[lf..le] (from the caller).
  Functions take the keys and arguments they need as parameters rather than upvalues, and the
  scripts pass KEYS and ARGV themselves: creating a closure costs per captured upvalue, on every
  call.
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
local function returnFromQuarantine(metaKey, quarantineKey, indexKey, base, nowText)
  local due = redis.call('ZRANGEBYSCORE', quarantineKey, '-inf', nowText, 'LIMIT', 0, QUARANTINE_RETURNS)
  for i = 1, #due do
    local key = base .. 'p:' .. due[i]
    local v = redis.call('HMGET', key, 'st', 't', 'l', 's')
    if v[1] == 'Q' then
      local score = math.max(tonumber(v[4]) or 0, {{scoreAfterQuarantine}})
      redis.call('HSET', key, 's', score, 'st', 'A', 'qu', 0)
      indexAdd(base, indexKey, v[2], v[3], score, due[i])
    end
  end
  if #due > 0 then redis.call('ZREM', quarantineKey, unpack(due)) end
  quarantineNext(metaKey, quarantineKey)
end

-- Until when proxy `id` is busy under one of the shadow domain-keys (0 = idle under all).
local function shadowsUntil(base, now, id, shadows)
  if not shadows then return 0 end
  local at = 0
  for i = 1, #shadows do
    local s = shadowUntil(base, shadows[i], id, now)
    if s > at then at = s end
  end
  return at
end

-- Step 8: grant proxy `id` under maxConcurrency `mc`. `pk` is its pair key, `pr` the pair
-- fields u h f m bt x g p e (the caller checked there is room); `cur` the domain-key's interval
-- now, before jitter; `busy` the domain-key's busy index, `binding` the session binding's key.
-- The rest are the request's arguments (list `acquire`), as text.
local function grantLease(busy, binding, now, nowText, id, pk, pr, rebound, mc, busyN, cur,
                          base, dk, worker, identity, hex, ttlText, mcText, minText, maxText, adaptive,
                          jitterText, anchor, banTtl, sessionKey, sessionTtl, requestId, group, affinity)
  local exp = now + tonumber(ttlText)
  local kept, count, first, gone = scanHolders(pr[2], now, nil)
  if gone then tombstoneGone(base, dk, id, gone) end
  -- G4: max(previous + 1, now in µs): increasing even after the store lost the pair's state
  local token = math.max((tonumber(pr[3]) or 0) + 1, NOW_US)
  -- each number formatted once (formatting one costs about as much as a redis.call)
  local tokenText, expText = string.format('%d', token), string.format('%d', exp)
  local holders = kept .. hex .. '=' .. expText .. '=' .. tokenText .. '=' .. ttlText .. ';'
  -- G2: the interval of this grant, and what an end of the lease adds to it
  local minInterval = tonumber(minText)
  local baseInterval = cur
  local interval = baseInterval
  local jitter = tonumber(jitterText)
  if jitter > 0 then interval = interval + math.random(0, jitter) end
  -- the g field: the gap after an end with the "release" anchor, -1 with "grant"
  local gField, gap = -1, 0
  if anchor == 'r' then gField, gap = interval, interval end
  -- (the policy's own text when the interval is the policy's: no number formatted)
  local pacing
  if baseInterval == minInterval then
    pacing = minText .. ':' .. minText .. ':' .. maxText .. ':' .. adaptive
  else
    pacing = baseInterval .. ':' .. minInterval .. ':' .. maxText .. ':' .. adaptive
  end
  local u = tonumber(pr[1]) or 0
  if interval > 0 then u = math.max(u, now + interval) end
  local gcUntil = pairGcDue(pr[6], math.max(now, u))
  local set = {'f', tokenText, 'h', holders, 'e', nowText}
  if interval > 0 then set[7], set[8], set[9], set[10] = 'n', now + interval, 'u', u end
  if pr[4] ~= mcText then
    set[#set + 1] = 'm'
    set[#set + 1] = mcText
  end
  if pr[5] ~= banTtl then
    set[#set + 1] = 'bt'
    set[#set + 1] = banTtl
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
  -- G8: the group and window that the lease's renewals and release update the hold of
  local ig = isolationField(group, affinity) or ''
  if (pr[10] or '') ~= ig then
    set[#set + 1] = 'ig'
    set[#set + 1] = ig
  end
  redis.call('HSET', pk, unpack(set))
  if group ~= '' then holdInGroup(base, group, id, dk, exp + tonumber(affinity), now, true) end
  if gcUntil then redis.call('PEXPIRE', pk, gcUntil - now) end
  -- blockedUntil with the new holder and the request's maxConcurrency as the pair's cap
  local bu = u
  if count + 1 >= mc then
    if count == 0 or exp < first then first = exp end
    if first + gap > bu then bu = first + gap end
  end
  if bu > now then
    redis.call('ZADD', busy, bu == exp and expText or bu, id)
    -- a new busy key gets its GC TTL; a busy one is refreshed now and then
    if busyN == 0 or math.random(64) == 1 then redis.call('PEXPIRE', busy, bu - now + DAY_MS) end
  end
  local key = base .. 'p:' .. id
  local by = identity
  if by == '' then by = worker end
  redis.call('HSET', key, 'lb', by, 'la', nowText)
  if sessionKey ~= '' then
    local sttl = tonumber(sessionTtl)
    redis.call('SET', binding, (now + sttl) .. ':' .. id, 'PX', sttl + SESSION_GC_MS)
  end
  if requestId ~= '' then
    -- the grant time as text (a number formatted costs about as much as a redis.call)
    local record = hex .. ' ' .. id .. ' ' .. tokenText .. ' ' .. nowText
    redis.call('SET', base .. 'rq:' .. worker .. ' ' .. requestId, record, 'PX', REQUEST_MEMORY_MS)
  end
  local v = redis.call('HMGET', key, 'u', 't', 'l', 's', 'st', 'lt', 'sc', 'fc', 'qu', 'qc')
  return {1, token, exp, rebound, id, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], by, now, v[9], v[10], hex}
end

-- The lease a retried request was granted before, while it is held: its grant reply again.
local function grantedBefore(base, dk, worker, requestId, now)
  local prev = redis.call('GET', base .. 'rq:' .. worker .. ' ' .. requestId)
  if not prev then return nil end
  local hex, id, token, grantedAt = string.match(prev, '^(%x+) (.+) (%d+) (%d+)$')
  if not hex or now - tonumber(grantedAt) >= REQUEST_MEMORY_MS then return nil end
  local pr = redis.call('HMGET', base .. 'r:' .. dk .. ':' .. id, 'h')
  local _, _, _, _, mine = scanHolders(pr[1], now, hex)
  if not mine then return nil end
  local e, t = string.match(mine, '^%x+=(%d+)=(%d+)=%d+;$')
  if t ~= token or tonumber(e) <= now then return nil end
  local v = redis.call('HMGET', base .. 'p:' .. id, 'u', 't', 'l', 's', 'st', 'lt', 'sc', 'fc', 'lb', 'la', 'qu', 'qc')
  if not v[1] then return nil end
  return {1, tonumber(token), tonumber(e), 0, id, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], tonumber(v[10]), v[11], v[12], hex}
end

-- Whether proxy `id` is reserved for another worker than `worker` (one that may use it from its
-- fallback pool) for domain-key `dk`: one of that worker's scope ("\t<owner>\n<dk>"), or any when
-- its scope is every domain-key ("\t<owner>"), or the isolation `group` of `dk` ("\t<owner>\n#<group>";
-- "" = none). `rsv` is the reservations key when the pool has any, else nil (no read).
local function reservedForOther(worker, rsv, id, dk, group)
  if not rsv then return false end
  local owner = redis.call('HGET', rsv, id)
  if not owner or owner == worker then return false end
  if redis.call('HEXISTS', rsv, '\t' .. owner .. '\n' .. dk) == 1 or redis.call('HEXISTS', rsv, '\t' .. owner) == 1 then return true end
  -- a share reserved for the isolation group of the domain-key ("#<group>"): every key of it
  return group ~= '' and redis.call('HEXISTS', rsv, '\t' .. owner .. '\n#' .. group) == 1
end

-- Whether proxy `id` has the wanted `tier` ("" any) and labels (`needles`, nil when none: no
-- read; the candidate index then guarantees the tier).
local function matchesRequest(base, tier, id, needles)
  if not needles then return true end
  local v = redis.call('HMGET', base .. 'p:' .. id, 't', 'l')
  if tier ~= '' and v[1] ~= tier then return false end
  return labelsMatch(v[2], needles)
end

-- Step 6, one candidate `id` of the probes or the scan: its pair key and fields (u h f m bt x g
-- p e) when it can be granted now, else nil and the moment it frees up when that is something
-- the busy index does not show (the domain-key's interval now `cur`, a shadow domain-key, a hold in
-- an isolation group; 0 =
-- none). Eligible: the pair not blocked, no holder ended within its gap, fewer live holders
-- than both its own cap and the request's `mc`, its anchor plus `cur` in the past; the proxy of
-- the wanted tier and labels, reserved for no other worker, idle under the shadow domain-keys,
-- held by no other domain-key in its isolation `iso` (G8; includes/isolation.lua).
local function candidatePair(base, dk, tier, worker, now, id, mc, cur, needles, rsv, shadows, iso, group)
  local pk = base .. 'r:' .. dk .. ':' .. id
  local pr = redis.call('HMGET', pk, 'u', 'h', 'f', 'm', 'bt', 'x', 'g', 'p', 'e', 'ig')
  if pr[1] and tonumber(pr[1]) > now then return nil, 0 end
  local anchor = tonumber(pr[9]) or 0
  if pr[2] and pr[2] ~= '' then
    local _, count, _, _, _, goneMax = scanHolders(pr[2], now, nil)
    local gap, byEnd = gapOf(pr[7])
    if goneMax > 0 and goneMax + gap > now then return nil, 0 end
    if count >= mc or count >= (tonumber(pr[4]) or 1) then return nil, 0 end
    if byEnd and goneMax > anchor then anchor = goneMax end
  end
  if anchor > 0 and anchor + cur > now then
    if matchesRequest(base, tier, id, needles) then return nil, anchor + cur end
    return nil, 0
  end
  if not matchesRequest(base, tier, id, needles) or reservedForOther(worker, rsv, id, dk, group) then return nil, 0 end
  local su = math.max(shadowsUntil(base, now, id, shadows), heldInGroups(base, iso, id, dk, now))
  if su == 0 then return pk, pr end
  return nil, su
end

-- A request bound to one proxy `b` (its session's, or the argument proxyId): its pair key and
-- fields when it can be granted now; nil and the ms until it frees (-1 unknown) when the
-- request must be denied; nil, nil when `b` cannot serve it at all (not ACTIVE, another tier,
-- labels, banned).
local function boundPair(base, dk, tier, worker, now, b, needles, mc, cur, shadows, rsv, iso, group)
  if reservedForOther(worker, rsv, b, dk, group) then return nil, -1 end
  local v = redis.call('HMGET', base .. 'p:' .. b, 'st', 't', 'l')
  if v[1] == 'A' and (tier == '' or v[2] == tier) and (not needles or labelsMatch(v[3], needles)) then
    local pk = base .. 'r:' .. dk .. ':' .. b
    local pr = redis.call('HMGET', pk, 'u', 'h', 'f', 'm', 'bt', 'x', 'g', 'p', 'e', 'ig', 'b')
    if (tonumber(pr[11]) or 0) <= now then
      local gap, byEnd = gapOf(pr[7])
      local at = tonumber(pr[1]) or 0
      local anchor = tonumber(pr[9]) or 0
      local _, count, first, _, _, goneMax = scanHolders(pr[2], now, nil)
      if goneMax > 0 then at = math.max(at, goneMax + gap) end
      if byEnd and goneMax > anchor then anchor = goneMax end
      if anchor > 0 then at = math.max(at, anchor + cur) end
      if count >= mc or count >= (tonumber(pr[4]) or 1) then at = math.max(at, first + gap) end
      at = math.max(at, shadowsUntil(base, now, b, shadows), heldInGroups(base, iso, b, dk, now))
      if at <= now then return pk, pr end
      return nil, at - now
    end
  end
  return nil, nil
end

-- Step 7: when an eligible proxy is known to appear. With no candidates at all, the earliest
-- quarantine return (busy entries then belong to proxies out of the list); otherwise the
-- earliest busy entry of the domain-key; -1 when neither is known.
local function retryAfter(quarantineKey, busy, now, nowText, n)
  local e
  if n == 0 then
    e = redis.call('ZRANGE', quarantineKey, 0, 0, 'WITHSCORES')
  else
    e = redis.call('ZRANGEBYSCORE', busy, '(' .. nowText, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  end
  if #e == 0 then return -1 end
  return math.max(0, tonumber(e[2]) - now)
end

-- Step 6's candidate index: the tier's (or the whole) index, or the smallest label index of a
-- labels request when it is smaller. Answers the key and its size when it was counted (or nil).
local function candidateIndex(candidates, base, tier, needles)
  if not needles then return candidates, nil end
  local best, bestN = nil, nil
  if tier ~= '' then best, bestN = candidates, redis.call('ZCARD', candidates) end
  for i = 1, #needles do
    local key = labelIndex(base, needles[i])
    local n = redis.call('ZCARD', key)
    if not bestN or n < bestN then best, bestN = key, n end
  end
  return best, bestN
end

-- The whole acquire: its keys after K[ko], its arguments after A[ao], its wanted labels
-- A[lf..le] (none when lf > le). The script sets NOW_US (the store clock in µs) first.
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
  math.randomseed(tonumber(seed))
  local meta = redis.call('HMGET', metaKey, 'pv', 'qn', 'ep', 'es', 'lt', 'lta')
  local pv = (meta[3] or '') .. '.' .. (meta[1] or '0')
  if pv ~= policyVersion then return {-4, pv} end
  -- after a loss of state, nothing until leases from before can no longer be in use
  if meta[4] and tonumber(meta[4]) > now then return {-5, tonumber(meta[4]) - now} end
  if requestId ~= '' then
    local again = grantedBefore(base, dk, worker, requestId, now)
    if again then return again end
  end
  if meta[2] and tonumber(meta[2]) <= now then returnFromQuarantine(metaKey, quarantineKey, indexKey, base, nowText) end
  if math.random(BUSY_GC_ONE_IN) == 1 then redis.call('ZREMRANGEBYSCORE', busy, '-inf', nowText) end
  -- the worker is seen (a worker that keeps a fallback pool is recorded as such too; "-": recorded
  -- moments ago). Not before: an acquire answered stale or held (after a loss of state) does not
  -- count as the worker being back, so a silent worker's share stays reserved until its first
  -- real answer, which starts the hand-over of its fallback leases
  if fallbackPool ~= '-' then
    seeWorker(workersKey, base .. 'wf', worker, fallbackPool == '1', now, nowText)
    if yieldsLeases == '1' then seeYielding(base .. 'wy', worker, now, nowText) end
  end
  local needles = nil
  if lf <= le then
    needles = {}
    for i = lf, le do needles[#needles + 1] = A[i] end
  end
  local shadows = nil
  if shadowKeys ~= '' then
    shadows = {}
    for sdk in string.gmatch(shadowKeys, '[^\n]+') do shadows[#shadows + 1] = sdk end
  end
  -- G8: the isolation groups whose holds the candidates are checked against, and the keys that
  -- joined the group lately, whose live leases are (nil = none)
  local iso = nil
  if group ~= '' or formerGroups ~= '' or joinedKeys ~= '' then
    iso = {groups = {}, joined = {}}
    if group ~= '' then iso.groups[1] = group end
    for g in string.gmatch(formerGroups, '[^\n]+') do iso.groups[#iso.groups + 1] = g end
    for k in string.gmatch(joinedKeys, '[^\n]+') do iso.joined[#iso.joined + 1] = k end
  end
  local adapt = 0
  if adaptive == '1' then adapt = tonumber(redis.call('HGET', base .. 'd:' .. dk, 'a')) or 0 end
  -- the domain-key's interval now, before jitter
  local cur = tonumber(minIntervalMs)
  if adapt > cur then cur = adapt end
  local mc = tonumber(maxConcurrency)
  local busyN = redis.call('ZCOUNT', busy, '(' .. nowText, '+inf')
  -- proxies reserved for silent workers (their fallback pools may be using them)
  local rsv = base .. 'rsv'
  if redis.call('EXISTS', rsv) == 0 then rsv = nil end
  -- every proxy of the domain-key reserved for a silent worker that may use them from its fallback
  -- pool: refused, and not recorded as a use of the domain-key (the caller must not become
  -- established for it while that worker may be on it alone, docs/spec.md §7)
  if rsv then
    local whole = redis.call('HGET', rsv, '\n' .. dk)
    if whole and whole ~= worker then return {-5, -1} end
    -- every key of its isolation group
    if group ~= '' then
      whole = redis.call('HGET', rsv, '\n#' .. group)
      if whole and whole ~= worker then return {-5, -1} end
    end
  end
  -- the worker's use of the domain-key (fallback shares follow them; "": recorded moments ago),
  -- granted or not
  if domainUseMs ~= '' then recordDomainUse(base, worker, dk, now, tonumber(domainUseMs)) end
  -- the proxy to grant: its id, pair key and pair fields
  local id, pk, pr = nil, nil, nil
  local rebound = 0
  if proxyId ~= '' then
    local bpk, bpr = boundPair(base, dk, tier, worker, now, proxyId, needles, mc, cur, shadows, rsv, iso, group)
    if not bpk then return {-5, bpr or -1} end
    id, pk, pr = proxyId, bpk, bpr
  elseif sessionKey ~= '' then
    -- Step 5: the session's bound proxy; when it cannot serve the request, a rebind
    local s = redis.call('GET', binding)
    local sexp, b
    if s then sexp, b = string.match(s, '^(%d+):(.*)$') end
    if sexp and tonumber(sexp) > now then
      local bpk, bpr = boundPair(base, dk, tier, worker, now, b, needles, mc, cur, shadows, rsv, iso, group)
      if bpk then
        id, pk, pr = b, bpk, bpr
      elseif bpr then
        return {-5, bpr}
      else
        rebound = 1
      end
    end
  end
  if not id then
    -- Step 6: up to PROBES random positions of the top band, then a scan of the band.
    local cand, n = candidateIndex(candidates, base, tier, needles)
    -- a proxy held in the isolation group is as busy for this key as one of its own
    local heldN = 0
    if group ~= '' then heldN = heldCount(base, group, nowText) end
    local band = BAND_MIN + 2 * (busyN + heldN)
    if n then band = math.min(band, n) end
    local tried = nil
    local probes = 0
    -- the earliest moment a candidate held back by what the busy index does not show (the
    -- domain-key's interval now, a shadow domain-key, an isolation group) frees up (0 = none seen)
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
          local cpk, cpr = candidatePair(base, dk, tier, worker, now, ids[1], mc, cur, needles, rsv, shadows, iso, group)
          if cpk then
            id, pk, pr = ids[1], cpk, cpr
            break
          end
          if cpr > 0 and (freeAt == 0 or cpr < freeAt) then freeAt = cpr end
          tried = tried or {}
          tried[r] = true
        end
      end
    end
    if not id then
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
              local cpk, cpr = candidatePair(base, dk, tier, worker, now, ids[j], mc, cur, needles, rsv, shadows, iso, group)
              if cpk then
                id, pk, pr = ids[j], cpk, cpr
                break
              end
              if cpr > 0 and (freeAt == 0 or cpr < freeAt) then freeAt = cpr end
            end
          end
          if id then break end
          offset = offset + count
        end
      end
      if not id then
        local known = retryAfter(quarantineKey, busy, now, nowText, n)
        if freeAt > 0 and (known < 0 or freeAt - now < known) then known = freeAt - now end
        return {-5, known}
      end
    end
  end
  local granted = grantLease(busy, binding, now, nowText, id, pk, pr, rebound, mc, busyN, cur,
    base, dk, worker, identity, hex, ttlMs, maxConcurrency, minIntervalMs, maxIntervalMs, adaptive,
    jitterMs, anchor, banTtlMs, sessionKey, sessionTtlMs, requestId, group, affinity)
  noteTtl(metaKey, meta[5], meta[6], tonumber(ttlMs), now)
  return granted
end
