--[[
  G9, the acquire's side (docs/store-semantics.md §exit IPs): which proxies share a proxy's exit
  IP, and how their pairs hold it back. Fields of the proxy record `P p:<id>`: xi the exit IP
  ("" or absent = not known), xo the former exit, xu until when it counts (epoch ms), xp 1 once a
  health check got an answer through it, xh 1 when another proxy of the pool has its host, xg 1
  once it may have siblings (set when an exit it is or was on got a second member). Members of an
  exit: `P x:<ip>`, zset id → until (EXIT_FOREVER for a current member). The pool meta field xs is
  1 once a proxy of the pool got xg or xh: an acquire reads none of this before.
  Needs the includes pair and isolation (written by includes/exitRecord.lua).
]]

-- What the acquire's eligibility checks about exits (nil when the pool has no sibling and no
-- proxy sharing its host: the common case reads nothing): whether proxies waiting for their
-- first probe may be granted (`grantUnknown`, the request's argument "1"/"0").
local function exitRules(meta, grantUnknown)
  if meta[7] ~= '1' then return nil end
  return {grant = grantUnknown == '1'}
end

-- One sibling `m`'s pair for `dk`: its live holders, their earliest expiry, and until when the
-- pair holds the exit back regardless of holders (blocked, a holder ended within its gap, its
-- pacing anchor plus the interval now `cur`, a shadow domain-key, an isolation hold; 0 = none).
local function siblingHold(base, dk, m, now, cur, shadows, iso)
  local pr = redis.call('HMGET', base .. 'r:' .. dk .. ':' .. m, 'u', 'h', 'g', 'e')
  local at = tonumber(pr[1]) or 0
  if at <= now then at = 0 end
  local anchor = tonumber(pr[4]) or 0
  local count, first = 0, 0
  if pr[2] and pr[2] ~= '' then
    local gap, byEnd = gapOf(pr[3])
    local _, n, earliest, _, _, goneMax = scanHolders(pr[2], now, nil)
    count, first = n, earliest
    if goneMax > 0 and goneMax + gap > now and goneMax + gap > at then at = goneMax + gap end
    if byEnd and goneMax > anchor then anchor = goneMax end
  end
  if anchor > 0 and anchor + cur > now and anchor + cur > at then at = anchor + cur end
  if shadows then
    for i = 1, #shadows do
      local s = shadowUntil(base, shadows[i], m, now)
      if s > at then at = s end
    end
  end
  local held = heldInGroups(base, iso, m, dk, now)
  if held > at then at = held end
  return count, first, at
end

-- The other live members of exit `ip` (not `id`), appended to `sibs` (a list, or nil).
local function exitMembers(base, ip, id, now, sibs)
  local ms = redis.call('ZRANGE', base .. 'x:' .. ip, '(' .. now, '+inf', 'BYSCORE')
  for i = 1, #ms do
    if ms[i] ~= id then
      sibs = sibs or {}
      sibs[#sibs + 1] = ms[i]
    end
  end
  return sibs
end

-- Whether proxy `id`, whose own pair has `count` live holders under caps `mc` (the request's)
-- and `cap` (the pair's), may be granted for `dk` as far as its exit goes (rules `ex`, nil =
-- no check). Answers true, or false and the moment it frees up (-1: a proxy waiting for its first
-- probe, which this request may not be granted).
local function exitAllows(base, dk, id, now, ex, count, mc, cap, cur, shadows, iso)
  if not ex then return true end
  local v = redis.call('HMGET', base .. 'p:' .. id, 'xg', 'xi', 'xo', 'xu', 'xh', 'xp')
  local known = v[2] and v[2] ~= ''
  if v[5] == '1' and not known and v[6] ~= '1' and not ex.grant then return false, -1 end
  if v[1] ~= '1' then return true end
  local sibs = nil
  if known then sibs = exitMembers(base, v[2], id, now, sibs) end
  if v[3] and v[3] ~= '' and v[3] ~= v[2] and (tonumber(v[4]) or 0) > now then sibs = exitMembers(base, v[3], id, now, sibs) end
  if not sibs then return true end
  local total, earliest = count, 0
  local seen = {}
  for i = 1, #sibs do
    local m = sibs[i]
    if not seen[m] then
      seen[m] = true
      local c, first, at = siblingHold(base, dk, m, now, cur, shadows, iso)
      if at > now then return false, at end
      total = total + c
      if c > 0 and (earliest == 0 or first < earliest) then earliest = first end
    end
  end
  if total >= mc or total >= (tonumber(cap) or 1) then return false, earliest end
  return true
end
