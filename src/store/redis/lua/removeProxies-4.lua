--[[
  removeProxies: the proxies go with their index, quarantine and blacklist entries; their pairs
  and leases stay until they expire.

  KEYS[1] `P all`   every proxy id
  KEYS[2] `P idx`   ACTIVE index
  KEYS[3] `P q`     quarantine zset
  KEYS[4] `P bl`    blacklist set
  where P = "<prefix>:{<pool>}:".

  ARGV[1] P
  ARGV[2..] proxy ids

  Keys built in the script: `P p:<id>`, `P idx:t:<tier>`, `P idx:l:<k>=<v>`.

  Output: one integer per id, in order: 1 removed, 0 not found.

  Error codes: none (not found is a 0 flag).
]]
-- @include "base"
-- @include "proxy"

local base = ARGV[1]
local out = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local key = base .. 'p:' .. id
  local v = redis.call('HMGET', key, 'st', 't', 'l')
  if v[1] then
    redis.call('DEL', key)
    redis.call('ZREM', KEYS[1], id)
    indexRem(base, KEYS[2], v[2], v[3], id)
    redis.call('ZREM', KEYS[3], id)
    redis.call('SREM', KEYS[4], id)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
