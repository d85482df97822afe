--[[
  G9, the record's side (docs/store-semantics.md §exit IPs): the exit a health check showed, the
  proxies of one host, and the marks the acquire reads (fields and keys: includes/exits.lua).
  Host members: `P h:<host>`, the set of ids whose host (after the last "@", before the port) is
  <host>. Needs the includes base and events.
]]
-- A former exit counts this long after the change: leases granted under it may still run.
local FORMER_EXIT_MS = 3600000

-- The host of proxy id `id`: after its last "@", before its port.
local function hostOf(id)
  local rest = string.match(id, '^.*@(.*)$') or id
  return string.match(rest, '^(.*):%d+$') or rest
end

-- Mark every live member of exit `ip` as having siblings (xg) once it has two, and the pool as
-- one where exits matter (meta xs); meta xn counts the proxies marked (the acquire's band widens
-- by them: the busy index does not show a proxy a sibling holds back).
local function markSiblings(base, metaKey, ip, now)
  local ms = redis.call('ZRANGE', base .. 'x:' .. ip, '(' .. now, '+inf', 'BYSCORE')
  if #ms < 2 then return end
  for i = 1, #ms do
    local key = base .. 'p:' .. ms[i]
    if redis.call('EXISTS', key) == 1 and redis.call('HSETNX', key, 'xg', 1) == 1 then redis.call('HINCRBY', metaKey, 'xn', 1) end
  end
  redis.call('HSET', metaKey, 'xs', 1)
end

-- Record exit `ip` ("" = none shown) for proxy `id` (record `proxyKey`, which exists): a change
-- keeps the former exit counting for FORMER_EXIT_MS, and is an EXIT event ("<old> -> <new>",
-- "none" for no exit before). Answers the exit before when it changed, else nil.
local function recordExit(base, metaKey, proxyKey, id, ip, now)
  if ip == '' then return nil end
  local old = redis.call('HGET', proxyKey, 'xi') or ''
  if old == ip then return nil end
  if old ~= '' then
    local key = base .. 'x:' .. old
    redis.call('ZADD', key, now + FORMER_EXIT_MS, id)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    redis.call('HSET', proxyKey, 'xi', ip, 'xo', old, 'xu', now + FORMER_EXIT_MS)
  else
    redis.call('HSET', proxyKey, 'xi', ip)
  end
  redis.call('ZADD', base .. 'x:' .. ip, '+inf', id)
  markSiblings(base, metaKey, ip, now)
  local before = old
  if before == '' then before = 'none' end
  emitEvent(base, 'EXIT', id, '', before .. ' -> ' .. ip)
  return before
end

-- A proxy `id` new to the pool (its record written): it joins its host's members; the second
-- proxy of a host marks both as sharing it (xh), and the pool as one where exits matter.
local function noteHost(base, metaKey, id)
  local key = base .. 'h:' .. hostOf(id)
  redis.call('SADD', key, id)
  local n = redis.call('SCARD', key)
  if n < 2 then return end
  if n == 2 then
    local ms = redis.call('SMEMBERS', key)
    for i = 1, #ms do redis.call('HSET', base .. 'p:' .. ms[i], 'xh', 1) end
  else
    redis.call('HSET', base .. 'p:' .. id, 'xh', 1)
  end
  redis.call('HSET', metaKey, 'xs', 1)
end

-- A proxy `id` removed (its exit `ip`, "" = none; `marked`: its field xg): it leaves its host's
-- members (the last one left there no longer shares it), and stays a member of its exit for
-- FORMER_EXIT_MS (its leases may still run).
local function forgetHost(base, id, ip, marked, now)
  if marked == '1' then redis.call('HINCRBY', base .. 'm', 'xn', -1) end
  local key = base .. 'h:' .. hostOf(id)
  redis.call('SREM', key, id)
  if redis.call('SCARD', key) == 1 then
    local last = redis.call('SRANDMEMBER', key)
    redis.call('HDEL', base .. 'p:' .. last, 'xh')
  end
  if ip and ip ~= '' then redis.call('ZADD', base .. 'x:' .. ip, now + FORMER_EXIT_MS, id) end
end
