-- Quarantined proxies returned per acquire at most.
local QUARANTINE_RETURNS = 16

-- Step returnQuarantined (docs/store-semantics.md §acquire): when the pool meta says one is due,
-- return due QUARANTINED proxies to ACTIVE, with scoreAfterQuarantine or their own score when
-- higher (a proxy an admin banned for a while keeps its score).
local function returnQuarantined(q)
  local qn = q.meta[2]
  if not qn or tonumber(qn) > q.now then return end
  local base, quarantineKey = q.base, q.quarantineKey
  local due = redis.call('ZRANGEBYSCORE', quarantineKey, '-inf', q.nowText, 'LIMIT', 0, QUARANTINE_RETURNS)
  for i = 1, #due do
    local key = base .. 'p:' .. due[i]
    local v = redis.call('HMGET', key, 'st', 't', 'l', 's')
    if v[1] == 'Q' then
      local score = math.max(tonumber(v[4]) or 0, {{scoreAfterQuarantine}})
      redis.call('HSET', key, 's', score, 'st', 'A', 'qu', 0)
      indexAdd(base, q.indexKey, v[2], v[3], score, due[i])
    end
  end
  if #due > 0 then redis.call('ZREM', quarantineKey, unpack(due)) end
  quarantineNext(q.metaKey, quarantineKey)
end
