-- Quarantined proxies returned per acquire at most.
local QUARANTINE_RETURNS = 16

-- Step returnQuarantined (docs/store-semantics.md §acquire): when the pool `meta` (as checkVersion
-- read it) says one is due, return due QUARANTINED proxies to ACTIVE, with scoreAfterQuarantine
-- or their own score when higher (a proxy an admin banned for a while keeps its score).
local function returnQuarantined(meta, metaKey, quarantineKey, indexKey, base, now, nowText)
  if not meta[2] or tonumber(meta[2]) > now then return end
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
