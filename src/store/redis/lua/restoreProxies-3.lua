--[[
  restoreProxies: QUARANTINED or BLACKLISTED (or DISABLED) → ACTIVE with scoreAfterQuarantine,
  quarantine count 0; ACTIVE proxies are restored trivially (unchanged).

  KEYS[1] `P idx`   ACTIVE index
  KEYS[2] `P q`     quarantine zset
  KEYS[3] `P bl`    blacklist set
  where P = "<prefix>:{<pool>}:".

  ARGV[1] P
  ARGV[2] scoreAfterQuarantine
  ARGV[3..] proxy ids

  Keys built in the script: `P p:<id>`, `P idx:t:<tier>`, `P idx:l:<k>=<v>`.

  Output: one integer per id, in order: 1 restored, 0 not found.

  Error codes: none (not found is a 0 flag).
]]
-- @include "base"
-- @include "proxy"

local base = ARGV[1]
local score = tonumber(ARGV[2])
local out = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  local key = base .. 'p:' .. id
  local v = redis.call('HMGET', key, 'st', 't', 'l')
  if not v[1] then
    out[#out + 1] = 0
  else
    if v[1] ~= 'A' then
      redis.call('HSET', key, 's', score, 'st', 'A', 'qc', '0', 'qu', '0')
      redis.call('ZREM', KEYS[2], id)
      redis.call('SREM', KEYS[3], id)
      indexAdd(base, KEYS[1], v[2], v[3], score, id)
    end
    out[#out + 1] = 1
  end
end
return out
