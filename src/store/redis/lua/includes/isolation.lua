--[[
  Isolation groups (G8; docs/store-semantics.md §isolation groups): domain-keys of one group never
  hold one proxy at the same time. Needs the includes base and pair.

  Keys built here (same `{pool}` tag):
    `P gh:<group>:<id>`  the holds of proxy <id> in the group: "<dk>=<until>;" each, until =
                         the lease's expiry (or its end) plus the group's affinity window. A
                         string that expires with its last hold, so it needs no other GC.
    `P gb:<group>`       zset: proxy id → its latest hold in the group. Only sizes an acquire's
                         band (a proxy held there is busy for the group's other keys); stale
                         entries are invisible and dropped from time to time, as in busy indexes.
  The pair of a grouped grant keeps the group and window in its field ig ("<group>\t<ms>"):
  renewals and releases update the hold the grant wrote, whatever the policies say by then.
]]

local ISOLATION_GC_ONE_IN = 16

-- Until when proxy `id` is held in group `g` by a domain-key other than `dk` (0 = not).
local function heldInGroup(base, g, id, dk, now)
  local rec = redis.call('GET', base .. 'gh:' .. g .. ':' .. id)
  if not rec then return 0 end
  local at = 0
  for k, u in string.gmatch(rec, '([^;=]+)=(%d+);') do
    if k ~= dk then
      u = tonumber(u)
      if u > now and u > at then at = u end
    end
  end
  return at
end

-- Until when a live lease of domain-key `jk` holds proxy `id` (0 = none): a key that joined the
-- group since a policy change may hold it by a lease that no group records. Its live leases only:
-- its pacing and bans are its own.
local function liveUnder(base, jk, id, now)
  local h = redis.call('HGET', base .. 'r:' .. jk .. ':' .. id, 'h')
  local _, count, first = scanHolders(h, now, nil)
  if count > 0 then return first end
  return 0
end

-- Until when proxy `id` is held, for an acquire of `dk` with isolation `iso` (nil = none; else
-- {groups = names whose holds count, joined = keys whose live leases count}), by another
-- domain-key (0 = not held).
local function heldInGroups(base, iso, id, dk, now)
  if not iso then return 0 end
  local at = 0
  for i = 1, #iso.groups do
    local u = heldInGroup(base, iso.groups[i], id, dk, now)
    if u > at then at = u end
  end
  for i = 1, #iso.joined do
    local u = liveUnder(base, iso.joined[i], id, now)
    if u > at then at = u end
  end
  return at
end

-- Set `dk`'s hold of proxy `id` in group `g` to `untilAt`: raised only (`raise`, a grant or a
-- renewal), or set as given (the end of the pair's last live lease). Holds that passed are dropped.
local function holdInGroup(base, g, id, dk, untilAt, now, raise)
  local key = base .. 'gh:' .. g .. ':' .. id
  local rec = redis.call('GET', key)
  local parts, last = {}, 0
  local mine = untilAt
  if rec then
    for k, text in string.gmatch(rec, '([^;=]+)=(%d+);') do
      local u = tonumber(text)
      if k == dk then
        if raise and u > mine then mine = u end
      elseif u > now then
        parts[#parts + 1] = k .. '=' .. text .. ';'
        if u > last then last = u end
      end
    end
  end
  if mine > now then
    parts[#parts + 1] = dk .. '=' .. string.format('%d', mine) .. ';'
    if mine > last then last = mine end
  end
  local index = base .. 'gb:' .. g
  if #parts == 0 then
    if rec then redis.call('DEL', key) end
    redis.call('ZREM', index, id)
    return
  end
  redis.call('SET', key, table.concat(parts), 'PX', last - now)
  local added = redis.call('ZADD', index, last, id)
  if added == 1 or math.random(64) == 1 then redis.call('PEXPIRE', index, last - now + DAY_MS) end
end

-- The pair field ig of a grant in group `g` with affinity window `affinity` (text), or nil.
local function isolationField(g, affinity)
  if g == '' then return nil end
  return g .. '\t' .. affinity
end

-- The group and window (a number) of a pair's field ig, or nil.
local function isolationOf(ig)
  if not ig or ig == '' then return nil, 0 end
  local g, ms = string.match(ig, '^(.-)\t(%d+)$')
  if not g then return nil, 0 end
  return g, tonumber(ms)
end

-- How many proxies are held in group `g` now (by any key), for the band of an acquire; drops
-- stale entries now and then.
local function heldCount(base, g, nowText)
  local index = base .. 'gb:' .. g
  if math.random(ISOLATION_GC_ONE_IN) == 1 then redis.call('ZREMRANGEBYSCORE', index, '-inf', nowText) end
  return redis.call('ZCOUNT', index, '(' .. nowText, '+inf')
end
