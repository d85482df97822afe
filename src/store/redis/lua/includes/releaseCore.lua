--[[
  The release step (docs/store-semantics.md §release), shared by releaseLease and
  releaseAndAcquire, and `applyOutcome`, shared with reportOutcomes. Needs the includes base,
  config (scoreDelta), proxy, pair and scoring (whose pool keys kIdx, kQuarantine, kBlacklist,
  kMeta the script sets first).

  releaseLease(ko, ao, now) reads KEYS[ko + 1..8] and ARGV[ao + 1..RELEASE_ARGC] of the script:
  KEYS: 1 `P l:<hex>` tombstone of the lease, 2 `P r:<dk>:<id>` pair (its holders are the live
  lease records), 3 `P b:<dk>` busy index, 4 `P p:<id>` proxy, 5 `P idx`, 6 `P q`, 7 `P bl`,
  8 `P m` pool meta hash.
  ARGV: 1 base `P`, 2 lease hex, 3 domain-key, 4 proxy id, 5 fencing token, 6 outcome kind
  (S SUCCESS, R RATE_LIMITED, B BLOCKED, P PROXY_ERROR, T TARGET_ERROR, A ABANDONED),
  7 latencyMs, 8 retryAfterMs, 9 u (quarantine jitter draw, uniform in [0, 1)).
  Keys built here: `P idx:t:<tier>` of the proxy, `P l:<hex>` tombstones of other holders found
  expired.

  Answer (one integer): 1 released, -1 NOT_FOUND, -2 REVOKED, -3 EXPIRED.
]]
local RELEASE_ARGC = 9

-- Apply outcome `kind` to the proxy record `proxyKey` of `id` (if it still exists): counters,
-- latency EWMA (`latency` > 0), score with its consequences (`u`: the jitter draw).
local function scoreOutcome(base, id, proxyKey, kind, latency, u, now)
  local v = redis.call('HMGET', proxyKey, 's', 'st', 't', 'sc', 'fc', 'lt', 'qc')
  if not v[1] then return end
  local set
  if kind == 'S' then
    set = {'sc', (tonumber(v[4]) or 0) + 1}
  elseif kind == 'R' or kind == 'B' or kind == 'P' then
    set = {'fc', (tonumber(v[5]) or 0) + 1}
  else
    set = {}
  end
  if latency > 0 then
    local e = tonumber(v[6]) or 0
    if e <= 0 then e = latency else e = e + {{ewmaAlpha}} * (latency - e) end
    set[#set + 1] = 'lt'
    set[#set + 1] = e
  end
  local old = tonumber(v[1])
  changeScore(base, id, v[2], v[3], v[7], old, old + scoreDelta(kind), now, u, set)
  if #set > 0 then redis.call('HSET', proxyKey, unpack(set)) end
end

-- Apply outcome `kind` (latency, retryAfter: numbers; draw: the jitter draw) on the pair `pairKey`
-- of proxy `id` and on its record `proxyKey` (store-semantics "Applying an outcome"). `set`
-- holds the caller's HSET fields of the pair, `pr` its fields h r n b c bt x m as read, `count`
-- and `first` its live holders (after the caller's changes) and their earliest expiry. The busy
-- entry of `id` in `busyKey` follows.
local function applyOutcome(base, id, pairKey, busyKey, proxyKey, kind, latency, retryAfter, draw, now,
                            set, pr, count, first)
  local n, b, c = tonumber(pr[3]) or 0, tonumber(pr[4]) or 0, tonumber(pr[5]) or 0
  local i = #set
  if kind == 'S' then
    if pr[2] and pr[2] ~= '0' then set[i + 1], set[i + 2] = 'r', 0 end
  elseif kind == 'R' then
    local r = (tonumber(pr[2]) or 0) + 1
    local ra = retryAfter
    if ra <= 0 then ra = math.min({{rateLimitBackoffMaxMs}}, {{rateLimitBackoffBaseMs}} * 2 ^ (r - 1)) end
    c = now + ra
    set[i + 1], set[i + 2], set[i + 3], set[i + 4] = 'r', r, 'c', c
    set[i + 5], set[i + 6] = 'u', math.max(n, b, c)
  elseif kind == 'B' then
    b = now + (tonumber(pr[6]) or 0)
    set[i + 1], set[i + 2], set[i + 3], set[i + 4] = 'b', b, 'u', math.max(n, b, c)
  end
  local u = math.max(n, b, c)
  local gcUntil = pairGc(set, pr[7], math.max(now, u))
  if #set > 0 then redis.call('HSET', pairKey, unpack(set)) end
  if gcUntil then redis.call('PEXPIRE', pairKey, gcUntil - now) end
  if count > 0 and count >= (tonumber(pr[8]) or 1) and first > u then u = first end
  setBusy(busyKey, id, u, now)
  scoreOutcome(base, id, proxyKey, kind, latency, draw, now)
end

-- The whole release (KEYS after `ko` and ARGV after `ao`, see above).
local function releaseLease(ko, ao, now)
  local base, hex, dk, id, token = ARGV[ao + 1], ARGV[ao + 2], ARGV[ao + 3], ARGV[ao + 4], ARGV[ao + 5]
  local pairKey = KEYS[ko + 2]
  local pr = redis.call('HMGET', pairKey, 'h', 'r', 'n', 'b', 'c', 'bt', 'x', 'm')
  local kept, count, first, gone, mine = scanHolders(pr[1], now, hex)
  local held, ttl, expired
  if mine then
    local e
    e, held, ttl = string.match(mine, '^%x+=(%d+)=(%d+)=(%d+);$')
    if held ~= token then return -2 end
    expired = tonumber(e) <= now
  else
    -- not a holder: ended before (tombstone) or unknown
    local rec = redis.call('GET', KEYS[ko + 1])
    if not rec then return -1 end
    local state, check
    state, held, ttl, check = string.match(rec, '^(%d):(%d+):(%d+):(.*)$')
    if not state or check ~= dk .. '\31' .. id then return -1 end
    if held ~= token then return -2 end
    if state == '1' then return 1 end
    if state == '2' then return -3 end
    -- expired and dropped from the holders; its outcome is still applied (once)
    expired = true
  end
  if gone then tombstoneGone(base, dk, id, gone) end
  applyOutcome(base, id, pairKey, KEYS[ko + 3], KEYS[ko + 4], ARGV[ao + 6], tonumber(ARGV[ao + 7]),
    tonumber(ARGV[ao + 8]), ARGV[ao + 9], now, {'h', kept}, pr, count, first)
  if expired then
    tombstone(base, dk, id, hex, held, ttl, '2')
    return -3
  end
  tombstone(base, dk, id, hex, held, ttl, '1')
  return 1
end
