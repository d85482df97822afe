--[[
  restoreProxies: QUARANTINED or BLACKLISTED (or DISABLED) → ACTIVE with scoreAfterQuarantine,
  quarantine count 0; ACTIVE proxies are restored trivially (unchanged).

  KEYS: list `restoreProxiesKeys` (the order: src/store/redis/script-keys.ts):
    index       `P idx`   ACTIVE index
    quarantine  `P q`     quarantine zset
    blacklist   `P bl`    blacklist set
  where P = "<prefix>:{<pool>}:".

  ARGV: list `restoreProxies` (the order: src/store/redis/script-args.ts), then the proxy ids:
    base    P
    score   scoreAfterQuarantine

  Keys built in the script: `P p:<id>`, `P idx:t:<tier>`, `P idx:l:<k>=<v>`.

  Output: one integer per id, in order: 1 restored, 0 not found.

  Error codes: none (not found is a 0 flag).
]]
-- @include "base"
-- @include "proxy"

local indexKey = KEYS[{{restoreProxiesKeys.index}}]
local quarantineKey = KEYS[{{restoreProxiesKeys.quarantine}}]
local blacklistKey = KEYS[{{restoreProxiesKeys.blacklist}}]

local base = ARGV[{{restoreProxies.base}}]
local score = tonumber(ARGV[{{restoreProxies.score}}])
local out = {}
for i = {{argc.restoreProxies}} + 1, #ARGV do
  local id = ARGV[i]
  local key = base .. 'p:' .. id
  local v = redis.call('HMGET', key, 'st', 't', 'l')
  if not v[1] then
    out[#out + 1] = 0
  else
    if v[1] ~= 'A' then
      redis.call('HSET', key, 's', score, 'st', 'A', 'qc', '0', 'qu', '0')
      redis.call('ZREM', quarantineKey, id)
      redis.call('SREM', blacklistKey, id)
      indexAdd(base, indexKey, v[2], v[3], score, id)
    end
    out[#out + 1] = 1
  end
end
return out
