--[[
  The release step (docs/store-semantics.md §release), shared by releaseLease and
  releaseAndAcquire, and `applyOutcome`, shared with reportOutcomes. Needs the includes base,
  config (scoreDelta), proxy, pair, isolation and scoring (whose pool keys kIdx, kQuarantine, kBlacklist,
  kMeta the script sets first).

  releaseLease(ko, ao, now) reads the keys of list `releaseKeys` (src/store/redis/script-keys.ts)
  from KEYS[ko + 1] and the arguments of list `release` (src/store/redis/script-args.ts says what
  each means) from ARGV[ao + 1]. The keys: lease `P l:<hex>` tombstone of the lease (when it
  expired), pair `P r:<dk>:<id>` (its holders are the live lease records), busy `P b:<dk>` busy
  index, proxy `P p:<id>`, index `P idx`, quarantine `P q`, blacklist `P bl`, meta `P m` pool
  meta hash.
  The outcome kinds: S SUCCESS, R RATE_LIMITED, B BLOCKED, P PROXY_ERROR, T TARGET_ERROR,
  A ABANDONED.
  A lease released while live is announced on `P ev:<dk>` (SPUBLISH, same {pool} slot): brokers
  with acquires waiting for that domain-key try them at once (cross-replica wake-up); the last
  live lease of a pair in an isolation group also on `P ev:#<group>`, for the group's other keys.
  Keys built here: `P idx:t:<tier>` and `P idx:l:<k>=<v>` of the proxy, `P l:<hex>` tombstones
  of other holders found expired, `P d:<dk>` the domain-key's adaptive pacing and `P ad` the
  adapted domain-keys.

  Answer (one integer): 1 released, -1 NOT_FOUND, -2 REVOKED, -3 EXPIRED.
]]
-- The pair fields an outcome needs, in this order (HMGET).
local PAIR_H, PAIR_R, PAIR_N, PAIR_B, PAIR_C, PAIR_BT, PAIR_X, PAIR_M, PAIR_G, PAIR_P, PAIR_E, PAIR_T, PAIR_IG = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13

-- The pair's fields for an outcome (see PAIR_*).
local function readPair(pairKey)
  return redis.call('HMGET', pairKey, 'h', 'r', 'n', 'b', 'c', 'bt', 'x', 'm', 'g', 'p', 'e', 't', 'ig')
end

-- Leases of the pair `pr` ended, the last at `endedAt` (0 = none): with the "release" anchor,
-- move nextAt (pr[PAIR_N], a number after this) and the anchor, appending the anchor to `set`.
-- Answers whether nextAt moved.
local function endLeases(pr, endedAt, set)
  local gap, byEnd = gapOf(pr[PAIR_G])
  local n = tonumber(pr[PAIR_N]) or 0
  pr[PAIR_N] = n
  if not byEnd or endedAt <= 0 then return false end
  if endedAt > (tonumber(pr[PAIR_E]) or 0) then
    set[#set + 1] = 'e'
    set[#set + 1] = endedAt
  end
  local moved = anchoredNext(n, endedAt, gap)
  pr[PAIR_N] = moved
  return moved ~= n
end

-- Apply outcome `kind` to the proxy record `proxyKey` of `id` (if it still exists): counters,
-- latency EWMA (`latency` > 0), score with its consequences (`u`: the jitter draw). A `reported`
-- outcome (seen without a lease of this store) never takes the score below the floor: reports
-- alone never quarantine a proxy.
local function scoreOutcome(base, id, proxyKey, kind, latency, u, now, reported)
  -- the counter the outcome moves (none for TARGET_ERROR, ABANDONED)
  local counter = nil
  if kind == 'S' then counter = 'sc' elseif kind == 'R' or kind == 'B' or kind == 'P' then counter = 'fc' end
  local v
  if counter then v = redis.call('HMGET', proxyKey, 's', 'st', 'lt', counter) else v = redis.call('HMGET', proxyKey, 's', 'st', 'lt') end
  if not v[1] then return end
  local set = {}
  if counter then set[1], set[2] = counter, (tonumber(v[4]) or 0) + 1 end
  if latency > 0 then
    local e = tonumber(v[3]) or 0
    if e <= 0 then e = latency else e = e + {{ewmaAlpha}} * (latency - e) end
    set[#set + 1] = 'lt'
    set[#set + 1] = e
  end
  local old = tonumber(v[1])
  local new = old + scoreDelta(kind)
  if reported then new = math.max(new, math.min(old, {{floor}})) end
  -- tier, labels and quarantine count are read only when the score moves an ACTIVE proxy in the
  -- indexes or below the floor (a proxy at the top score, the common case, needs none of them)
  local tier, labels, qc
  if v[2] == 'A' then
    local clamped = math.max({{minScore}}, math.min({{maxScore}}, new))
    if clamped ~= old or clamped < {{floor}} then
      local w = redis.call('HMGET', proxyKey, 't', 'l', 'qc')
      tier, labels, qc = w[1], w[2], w[3]
    end
  end
  changeScore(base, id, v[2], tier, labels, qc, old, new, now, u, set)
  if #set > 0 then redis.call('HSET', proxyKey, unpack(set)) end
end

-- Adaptive pacing (§2) of domain-key `dk` after an outcome `kind` of a lease granted under the
-- pacing facts `p` ("<base>:<min>:<max>:<adaptive>"; nil = never granted here: the defaults).
-- The Lua mirror of adaptOnRateLimited / adaptOnSuccess in sdk/src/model/scoring.ts.
local function adaptDomain(base, dk, kind, p, now)
  if kind ~= 'R' and kind ~= 'S' then return end
  if kind == 'S' then
    -- the common case, without a pattern match: a success of a grant at the policy's own
    -- interval (base = min, or never granted here) lowers nothing
    if not p then return end
    local i = string.find(p, ':', 1, true)
    local j = i and string.find(p, ':', i + 1, true)
    if j and string.sub(p, 1, i - 1) == string.sub(p, i + 1, j - 1) then return end
  end
  local pb, pmin, pmax, pad = string.match(p or '0:0:0:1', '^(%d+):(%d+):(%d+):([01])$')
  if pad ~= '1' then return end
  pb, pmin, pmax = tonumber(pb), tonumber(pmin), tonumber(pmax)
  if kind == 'S' and pb <= pmin then return end
  local dkey = base .. 'd:' .. dk
  local d = redis.call('HMGET', dkey, 'a', 'l', 't', 'd')
  local a, l, t, lowered = tonumber(d[1]) or 0, tonumber(d[2]) or 0, tonumber(d[3]) or 0, tonumber(d[4]) or 0
  if kind == 'S' and (a <= 0 or pb < a or now - lowered < a) then return end
  local learned = 0
  if l > 0 and now - t < {{adaptiveMemoryMs}} then learned = l end
  local cap = pmax
  if cap <= 0 then cap = {{adaptiveMaxMs}} end
  if cap < pmin then cap = pmin end
  local na
  if kind == 'R' then
    l, t = math.max(learned, pb), now
    if pb < a then
      -- granted before the last raise: learned from, but no compounding
      na = a
    else
      local raised = {{adaptiveStartMs}}
      if pb > 0 then raised = pb * {{adaptiveIncrease}} end
      na = math.floor(math.min(cap, raised) + 0.5)
    end
  else
    local floor = math.max(pmin, math.floor(learned * {{adaptiveMargin}} + 0.5))
    na = math.min(cap, math.max(floor, math.floor(a * (1 - {{adaptiveDecrease}}) + 0.5)))
    if na == a then return end
    if na <= pmin then na = 0 end
    lowered = now
  end
  redis.call('HSET', dkey, 'a', na, 'l', l, 't', t, 'd', lowered)
  redis.call('PEXPIRE', dkey, {{adaptiveMemoryMs}} + DAY_MS)
  if na > 0 then redis.call('ZADD', base .. 'ad', na, dk) else redis.call('ZREM', base .. 'ad', dk) end
end

-- Apply outcome `kind` (latency, retryAfter: numbers; draw: the jitter draw) on the pair `pairKey`
-- of proxy `id` and on its record `proxyKey` (store-semantics "Applying an outcome"). `set`
-- holds the caller's HSET fields of the pair, `pr` its fields as read (PAIR_*; the caller may
-- have moved pr[PAIR_N]: `nMoved`), `count` and `first` its live holders (after the caller's
-- changes) and their earliest expiry. The busy entry of `id` in `busyKey` follows.
local function applyOutcome(base, id, dk, pairKey, busyKey, proxyKey, kind, latency, retryAfter, draw, now,
                            set, pr, count, first, nMoved, reported)
  local n, b, c = tonumber(pr[PAIR_N]) or 0, tonumber(pr[PAIR_B]) or 0, tonumber(pr[PAIR_C]) or 0
  local i = #set
  if nMoved then set[i + 1], set[i + 2] = 'n', n end
  i = #set
  if kind == 'S' then
    if pr[PAIR_R] and pr[PAIR_R] ~= '0' then set[i + 1], set[i + 2] = 'r', 0 end
  elseif kind == 'R' then
    local r = (tonumber(pr[PAIR_R]) or 0) + 1
    local ra = retryAfter
    if ra <= 0 then ra = math.min({{rateLimitBackoffMaxMs}}, {{rateLimitBackoffBaseMs}} * 2 ^ (r - 1)) end
    c = now + ra
    set[i + 1], set[i + 2], set[i + 3], set[i + 4] = 'r', r, 'c', c
    emitEvent(base, 'COOL_DOWN', id, dk, c)
  elseif kind == 'B' then
    b = now + (tonumber(pr[PAIR_BT]) or 0)
    set[i + 1], set[i + 2] = 'b', b
    emitEvent(base, 'BAN', id, dk, b)
  end
  local u = math.max(n, b, c)
  if nMoved or kind == 'R' or kind == 'B' then
    set[#set + 1] = 'u'
    set[#set + 1] = u
  end
  local gcUntil = pairGc(set, pr[PAIR_X], math.max(now, u))
  if #set > 0 then redis.call('HSET', pairKey, unpack(set)) end
  if gcUntil then redis.call('PEXPIRE', pairKey, gcUntil - now) end
  setBusy(busyKey, id, u, count, pr[PAIR_M], first, gapOf(pr[PAIR_G]), now)
  adaptDomain(base, dk, kind, pr[PAIR_P], now)
  scoreOutcome(base, id, proxyKey, kind, latency, draw, now, reported)
end

-- The whole release (KEYS after `ko` and ARGV after `ao`, see above).
local function releaseLease(ko, ao, now)
  local leaseKey = KEYS[ko + {{releaseKeys.lease}}]
  local pairKey = KEYS[ko + {{releaseKeys.pair}}]
  local busyKey = KEYS[ko + {{releaseKeys.busy}}]
  local proxyKey = KEYS[ko + {{releaseKeys.proxy}}]
  local base = ARGV[ao + {{release.base}}]
  local hex = ARGV[ao + {{release.hex}}]
  local dk = ARGV[ao + {{release.domainKey}}]
  local id = ARGV[ao + {{release.proxyId}}]
  local token = ARGV[ao + {{release.token}}]
  local kind = ARGV[ao + {{release.kind}}]
  local latency = ARGV[ao + {{release.latencyMs}}]
  local retryAfter = ARGV[ao + {{release.retryAfterMs}}]
  local u = ARGV[ao + {{release.u}}]
  local origin = ARGV[ao + {{release.origin}}]
  local pr = readPair(pairKey)
  local kept, count, first, gone, mine, goneMax = scanHolders(pr[PAIR_H], now, hex)
  local held, ttl, expired
  if mine then
    local e
    e, held, ttl = string.match(mine, '^%x+=(%d+)=(%d+)=(%d+);$')
    if held ~= token then return -2 end
    expired = tonumber(e) <= now
  else
    -- not a holder: released before (the pair's t), ended otherwise (tombstone) or unknown
    local released = releasedToken(pr[PAIR_T], hex)
    if released then
      if released ~= token then return -2 end
      return 1
    end
    local rec = redis.call('GET', leaseKey)
    if not rec then return -1 end
    local state, check
    state, held, ttl, check = string.match(rec, '^(%d):(%d+):(%d+):(.*)$')
    if not state or check ~= dk .. '\31' .. id then return -1 end
    if held ~= token then return -2 end
    if state == '1' then return 1 end -- written by versions that kept a tombstone per release
    if state == '2' then return -3 end
    -- expired and dropped from the holders; its outcome is still applied (once)
    expired = true
  end
  if gone then tombstoneGone(base, dk, id, gone) end
  -- G2: this lease ends now (whenever it expired: its request may have run until this release),
  -- after any other holder found expired
  local set = {'h', kept}
  if not expired then set[3], set[4] = 't', rememberReleased(pr[PAIR_T], hex, held) end
  local moved = endLeases(pr, now, set)
  applyOutcome(base, id, dk, pairKey, busyKey, proxyKey, kind, tonumber(latency),
    tonumber(retryAfter), u, now, set, pr, count, first, moved, false)
  if expired then
    tombstone(base, dk, id, hex, held, ttl, '2')
    return -3
  end
  -- G8: the last live lease of the pair ended now: the proxy stays with this key for the window
  if count == 0 then
    local g, affinity = isolationOf(pr[PAIR_IG])
    if g then
      holdInGroup(base, g, id, dk, now + affinity, now, false)
      -- and the waiters of the group's other domain-keys on other replicas (src/lease/group-wakes.ts)
      redis.call('SPUBLISH', base .. 'ev:#' .. g, origin)
    end
  end
  redis.call('SPUBLISH', base .. 'ev:' .. dk, origin)
  return 1
end
