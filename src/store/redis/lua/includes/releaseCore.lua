--[[
  The release step (docs/store-semantics.md §release), shared by releaseLease and
  releaseAndAcquire. Needs the includes base, proxy, pair and scoring.

  K (8 keys): 1 `P l:<hex>` tombstone of the lease, 2 `P r:<dk>:<id>` pair (its holders are the
  live lease records), 3 `P b:<dk>` busy index, 4 `P p:<id>` proxy, 5 `P idx`, 6 `P q`, 7 `P bl`,
  8 `P m` pool meta hash.
  A (release arguments, RELEASE_ARGC of them): 1 base `P`, 2 lease hex, 3 domain-key,
  4 proxy id, 5 fencing token, 6 outcome kind (S SUCCESS, R RATE_LIMITED, B BLOCKED,
  P PROXY_ERROR, T TARGET_ERROR, A ABANDONED), 7 latencyMs, 8 retryAfterMs, 9 score delta of the
  kind, 10 rateLimitBackoffBaseMs, 11 rateLimitBackoffMaxMs, 12 ewmaAlpha, 13 tombstone
  minimum ms, 14..21 scoring numbers (see includes/scoring.lua: minScore, maxScore, floor,
  maxQuarantines, quarantineBaseMs, quarantineMaxMs, quarantineJitter, u).
  Keys built here: `P idx:t:<tier>` of the proxy, `P l:<hex>` tombstones of other holders found
  expired.

  Answer (one integer): 1 released, -1 NOT_FOUND, -2 REVOKED, -3 EXPIRED.
]]
local RELEASE_ARGC = 21

-- Apply outcome A[6] to the proxy record (if it still exists).
local function scoreOutcome(K, A, now)
  local v = redis.call('HMGET', K[4], 's', 'st', 't', 'sc', 'fc', 'lt', 'qc')
  if not v[1] then return end
  local kind = A[6]
  local set = {}
  if kind == 'S' then
    set[1], set[2] = 'sc', (tonumber(v[4]) or 0) + 1
  elseif kind == 'R' or kind == 'B' or kind == 'P' then
    set[1], set[2] = 'fc', (tonumber(v[5]) or 0) + 1
  end
  local latency = tonumber(A[7])
  if latency > 0 then
    local e = tonumber(v[6]) or 0
    if e <= 0 then e = latency else e = e + tonumber(A[12]) * (latency - e) end
    set[#set + 1] = 'lt'
    set[#set + 1] = e
  end
  local old = tonumber(v[1])
  local score = old + tonumber(A[9])
  changeScore(A, 14, K, A[4], v[2], v[3], v[7], old, score, now, set)
  if #set > 0 then redis.call('HSET', K[4], unpack(set)) end
end

-- The whole release.
local function releaseLease(K, A, now)
  local tomb = tonumber(A[13])
  local base, dk, id, hex = A[1], A[3], A[4], A[2]
  local pr = redis.call('HMGET', K[2], 'h', 'r', 'n', 'b', 'c', 'bt', 'x', 'm')
  local kept, count, first, gone, mine = scanHolders(pr[1], now, hex)
  local token, ttl, expired
  if mine then
    local e
    e, token, ttl = string.match(mine, '=(%d+)=(%d+)=(%d+);$')
    if token ~= A[5] then return -2 end
    expired = tonumber(e) <= now
  else
    -- not a holder: ended before (tombstone) or unknown
    local rec = redis.call('GET', K[1])
    if not rec then return -1 end
    local state, check
    state, token, ttl, check = string.match(rec, '^(%d):(%d+):(%d+):(.*)$')
    if not state or check ~= dk .. '\31' .. id then return -1 end
    if token ~= A[5] then return -2 end
    if state == '1' then return 1 end
    if state == '2' then return -3 end
    -- expired and dropped from the holders; its outcome is still applied (once)
    expired = true
  end
  if gone then tombstoneGone(base, dk, id, gone, tomb) end
  -- the outcome on the pair
  local set = {'h', kept}
  local n, b, c = tonumber(pr[3]) or 0, tonumber(pr[4]) or 0, tonumber(pr[5]) or 0
  local kind = A[6]
  if kind == 'S' then
    if pr[2] and pr[2] ~= '0' then set[3], set[4] = 'r', 0 end
  elseif kind == 'R' then
    local r = (tonumber(pr[2]) or 0) + 1
    local ra = tonumber(A[8])
    if ra <= 0 then ra = math.min(tonumber(A[11]), tonumber(A[10]) * 2 ^ (r - 1)) end
    c = now + ra
    set[3], set[4], set[5], set[6], set[7], set[8] = 'r', r, 'c', c, 'u', math.max(n, b, c)
  elseif kind == 'B' then
    b = now + (tonumber(pr[6]) or 0)
    set[3], set[4], set[5], set[6] = 'b', b, 'u', math.max(n, b, c)
  end
  local u = math.max(n, b, c)
  local gcUntil = pairGc(set, pr[7], math.max(now, u))
  redis.call('HSET', K[2], unpack(set))
  if gcUntil then redis.call('PEXPIRE', K[2], gcUntil - now) end
  if count > 0 and count >= (tonumber(pr[8]) or 1) and first > u then u = first end
  setBusy(K[3], id, u, now)
  scoreOutcome(K, A, now)
  if expired then
    tombstone(base, dk, id, hex, token, ttl, '2', tomb)
    return -3
  end
  tombstone(base, dk, id, hex, token, ttl, '1', tomb)
  return 1
end
