--[[
  listPolicies: the pool's policies with their version, the history of replaced sets still
  kept, and the number of proxies in the pool, read together.

  KEYS[1] `P pol`   pattern → policy JSON
  KEYS[2] `P m`     pool meta hash: pv policy counter (absent = "0"), ep epoch (absent = "")
  KEYS[3] `P polh`  history: list of replaced sets, newest first (includes/policyHistory.lua)
  KEYS[4] `P all`   every proxy id of the pool
  where P = "<prefix>:{<pool>}:".

  ARGV[1] now (epoch ms; "" = Redis TIME)
  ARGV[2] keepMs: sets replaced longer ago than this are left out

  Keys built in the script: none.

  Output: {version "<ep>.<pv>", {pattern1, json1, pattern2, json2, ...}, {history entry, ...}, ep,
  proxies}.

  Error codes: none.
]]
-- @include "base"
-- @include "policyHistory"

local now = storeNow(ARGV[1])
local keep = tonumber(ARGV[2])
local history = {}
for _, entry in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do
  if historyTime(entry) + keep > now then history[#history + 1] = entry end
end
local meta = redis.call('HMGET', KEYS[2], 'pv', 'ep')
local ep = meta[2] or ''
return {ep .. '.' .. (meta[1] or '0'), redis.call('HGETALL', KEYS[1]), history, ep, redis.call('ZCARD', KEYS[4])}
