--[[
  The eligibility rules of the acquire (docs/store-semantics.md §acquire, "eligible"), shared by
  its steps pickBound and pickCandidate: whether a proxy matches the request's tier and labels,
  is busy under a shadow domain-key, and whether a pair can be granted now. Needs the includes
  base, proxy, pair, isolation and reservations (whether a proxy is kept for a silent worker:
  `proxyReservedUntil`; `honors`: the caller keeps to its lease's TTL).
]]

-- Whether proxy `id` has the wanted `tier` ("" any) and labels (`needles`, nil when none: no
-- read; the candidate index then guarantees the tier).
local function matchesRequest(base, tier, id, needles)
  if not needles then return true end
  local v = redis.call('HMGET', base .. 'p:' .. id, 't', 'l')
  if tier ~= '' and v[1] ~= tier then return false end
  return labelsMatch(v[2], needles)
end

-- One candidate `id` of the probes or the scan of pickCandidate: its pair key and fields (u h f m bt x g
-- p e) when it can be granted now, else nil and the moment it frees up when that is something
-- the busy index does not show (the domain-key's interval now `cur`, a shadow domain-key, a hold in
-- an isolation group; 0 =
-- none). Eligible: the pair not blocked, no holder ended within its gap, fewer live holders
-- than both its own cap and the request's `mc`, its anchor plus `cur` in the past; the proxy of
-- the wanted tier and labels, reserved for no other worker, idle under the shadow domain-keys,
-- held by no other domain-key in its isolation `iso` (G8; includes/isolation.lua), its exit's
-- other proxies idle for `dk` as it must be (G9, rules `ex`; includes/exits.lua).
local function candidatePair(base, dk, tier, worker, honors, now, id, mc, cur, needles, rsv, shadows, iso, group, ex)
  local pk = base .. 'r:' .. dk .. ':' .. id
  local pr = redis.call('HMGET', pk, 'u', 'h', 'f', 'm', 'bt', 'x', 'g', 'p', 'e', 'ig')
  if pr[1] and tonumber(pr[1]) > now then return nil, 0 end
  local anchor = tonumber(pr[9]) or 0
  local count = 0
  if pr[2] and pr[2] ~= '' then
    local _, n, _, _, _, goneMax = scanHolders(pr[2], now, nil)
    local gap, byEnd = gapOf(pr[7])
    if goneMax > 0 and goneMax + gap > now then return nil, 0 end
    if n >= mc or n >= (tonumber(pr[4]) or 1) then return nil, 0 end
    if byEnd and goneMax > anchor then anchor = goneMax end
    count = n
  end
  if anchor > 0 and anchor + cur > now then
    if matchesRequest(base, tier, id, needles) then return nil, anchor + cur end
    return nil, 0
  end
  if not matchesRequest(base, tier, id, needles) or proxyReservedUntil(rsv, id, dk, group, worker, honors, now) == 0 then return nil, 0 end
  local su = math.max(shadowsUntil(base, now, id, shadows), heldInGroups(base, iso, id, dk, now))
  if su ~= 0 then return nil, su end
  -- G9: the exit's other proxies hold it as its own pair would (includes/exits.lua)
  local ok, at = exitAllows(base, dk, id, now, ex, count, mc, pr[4], cur, shadows, iso)
  if ok then return pk, pr end
  if at < 0 then return nil, 0 end
  return nil, at
end

-- A request bound to one proxy `b` (its session's, or the argument proxyId): its pair key and
-- fields when it can be granted now; nil and the ms until it frees (-1 unknown) when the
-- request must be denied; nil, nil when `b` cannot serve it at all (not ACTIVE, another tier,
-- labels, banned, waiting for its first probe: G9).
local function boundPair(base, dk, tier, worker, honors, now, b, needles, mc, cur, shadows, rsv, iso, group, ex)
  if proxyReservedUntil(rsv, b, dk, group, worker, honors, now) == 0 then return nil, -1 end
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
      if at > now then return nil, at - now end
      -- G9: a proxy waiting for its first probe cannot serve it; a busy sibling is waited for
      local ok, xat = exitAllows(base, dk, b, now, ex, count, mc, pr[4], cur, shadows, iso)
      if ok then return pk, pr end
      if xat < 0 then return nil, nil end
      return nil, math.max(1, xat - now)
    end
  end
  return nil, nil
end
