--[[
  removeProxies: the proxies go with their index, quarantine and blacklist entries; their pairs
  and leases stay until they expire.

  KEYS: list `removeProxiesKeys` (the order: src/store/redis/script-keys.ts):
    all         `P all`   every proxy id
    index       `P idx`   ACTIVE index
    quarantine  `P q`     quarantine zset
    blacklist   `P bl`    blacklist set
  where P = "<prefix>:{<pool>}:".

  ARGV: list `removeProxies` (base: P) (the order: src/store/redis/script-args.ts), then the proxy ids.

  Keys built in the script: `P p:<id>`, `P idx:t:<tier>`, `P idx:l:<k>=<v>`, and of G9
  (includes/exitRecord.lua) `P h:<host>` and `P x:<exit>`: a removed proxy stays a member of its
  exit for an hour, as its leases may still run.

  Output: one integer per id, in order: 1 removed, 0 not found.

  Error codes: none (not found is a 0 flag).
]]
-- @include "base"
-- @include "proxy"
-- @include "events"
-- @include "exitRecord"

local allKey = KEYS[{{removeProxiesKeys.all}}]
local indexKey = KEYS[{{removeProxiesKeys.index}}]
local quarantineKey = KEYS[{{removeProxiesKeys.quarantine}}]
local blacklistKey = KEYS[{{removeProxiesKeys.blacklist}}]

local base = ARGV[{{removeProxies.base}}]
local out = {}
local now = storeNow('')
for i = {{argc.removeProxies}} + 1, #ARGV do
  local id = ARGV[i]
  local key = base .. 'p:' .. id
  local v = redis.call('HMGET', key, 'st', 't', 'l', 'xi', 'xg')
  if v[1] then
    forgetHost(base, id, v[4], v[5], now)
    redis.call('DEL', key)
    redis.call('ZREM', allKey, id)
    indexRem(base, indexKey, v[2], v[3], id)
    redis.call('ZREM', quarantineKey, id)
    redis.call('SREM', blacklistKey, id)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
