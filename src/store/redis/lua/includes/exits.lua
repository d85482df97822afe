--[[
  G9, the acquire's side (docs/store-semantics.md §exit IPs): which proxies share a proxy's exit
  IP, and how their pairs hold it back. Fields of the proxy record `P p:<id>`: xi the exit IP
  ("" or absent = not known), xo the former exit, xu until when it counts (epoch ms), xp 1 once a
  health check got an answer through it, xh 1 when another proxy of the pool has its host, xg 1
  once it may have siblings (set when an exit it is or was on got a second member), xc 1 while a
  proxy of a lower shard of its sharded pool leaves from its exit. Members of an
  exit: `P x:<ip>`, zset id → until (+inf for a current member). The pool meta field xs is 1 once
  a proxy of the pool got xg or xh: before, an acquire reads none of this (prepareChoice answers
  no rules).
  One function: each function of a script is a closure made on every call of the script.
  Needs the includes pair and isolation (written by includes/exitRecord.lua).
]]

-- Whether proxy `id`, whose own pair has `count` live holders under caps `mc` (the request's)
-- and `cap` (the pair's field m), may be granted for `dk` as far as its exit goes. `ex`: the
-- rules of prepareChoice, nil = no check, else the request's grantUnknownExits ("1" = a proxy
-- waiting for its first probe may be granted). Each sibling's pair for `dk` holds the proxy back
-- as its own would: blocked, a holder ended within its gap, its pacing anchor plus the interval
-- now `cur`, a shadow domain-key, an isolation hold; its live holders count with `count`.
-- Answers true, or false and the moment it frees up (-1: the proxy cannot serve the request: it
-- waits for its first probe, which this request may not skip, or a sibling is banned for `dk`).
local function exitAllows(base, dk, id, now, ex, count, mc, cap, cur, shadows, iso)
  if not ex then return true end
  local v = redis.call('HMGET', base .. 'p:' .. id, 'xg', 'xi', 'xo', 'xu', 'xh', 'xp', 'xc')
  local known = v[2] and v[2] ~= ''
  if v[5] == '1' and not known and v[6] ~= '1' and ex ~= '1' then return false, -1 end
  -- a proxy of a lower shard leaves from its exit (a sharded pool: src/store/sharded/shard-exits.ts)
  if v[7] == '1' then return false, -1 end
  if v[1] ~= '1' then return true end
  local exits = {}
  if known then exits[1] = v[2] end
  if v[3] and v[3] ~= '' and v[3] ~= v[2] and (tonumber(v[4]) or 0) > now then exits[#exits + 1] = v[3] end
  local total, earliest, seen = count, 0, {}
  for e = 1, #exits do
    local members = redis.call('ZRANGE', base .. 'x:' .. exits[e], '(' .. now, '+inf', 'BYSCORE')
    for i = 1, #members do
      local m = members[i]
      if m ~= id and not seen[m] then
        seen[m] = true
        local pr = redis.call('HMGET', base .. 'r:' .. dk .. ':' .. m, 'u', 'h', 'g', 'e', 'b')
        -- a ban holds the exit as the proxy's own ban would: it cannot serve the key
        if (tonumber(pr[5]) or 0) > now then return false, -1 end
        local at = tonumber(pr[1]) or 0
        local anchor = tonumber(pr[4]) or 0
        if pr[2] and pr[2] ~= '' then
          local gap, byEnd = gapOf(pr[3])
          local _, n, first, _, _, goneMax = scanHolders(pr[2], now, nil)
          if goneMax > 0 and goneMax + gap > at then at = goneMax + gap end
          if byEnd and goneMax > anchor then anchor = goneMax end
          total = total + n
          if n > 0 and (earliest == 0 or first < earliest) then earliest = first end
        end
        if anchor > 0 and anchor + cur > at then at = anchor + cur end
        at = math.max(at, shadowsUntil(base, now, m, shadows))
        at = math.max(at, heldInGroups(base, iso, m, dk, now))
        if at > now then return false, at end
      end
    end
  end
  if total >= mc or total >= (tonumber(cap) or 1) then return false, earliest end
  return true
end
