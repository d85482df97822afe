--[[
  listPolicies: the pool's policies with their version, the history of replaced sets still
  kept, and the number of proxies in the pool, read together.

  KEYS: list `listPoliciesKeys` (the order: src/store/redis/script-keys.ts):
    policies  `P pol`   pattern → policy JSON
    meta      `P m`     pool meta hash: pv policy counter (absent = "0"), ep epoch (absent = "")
    history   `P polh`  history: list of replaced sets, newest first (includes/policyHistory.lua)
    all       `P all`   every proxy id of the pool
  where P = "<prefix>:{<pool>}:".

  ARGV: list `listPolicies` (the order: src/store/redis/script-args.ts):
    now       epoch ms; "" = Redis TIME
    keepMs    sets replaced longer ago than this are left out

  Keys built in the script: none.

  Output: {version "<ep>.<pv>", {pattern1, json1, pattern2, json2, ...}, {history entry, ...}, ep,
  proxies}.

  Error codes: none.
]]
-- @include "base"
-- @include "policyHistory"

local policiesKey = KEYS[{{listPoliciesKeys.policies}}]
local metaKey = KEYS[{{listPoliciesKeys.meta}}]
local historyKey = KEYS[{{listPoliciesKeys.history}}]
local allKey = KEYS[{{listPoliciesKeys.all}}]

local now = storeNow(ARGV[{{listPolicies.now}}])
local keep = tonumber(ARGV[{{listPolicies.keepMs}}])
local history = {}
for _, entry in ipairs(redis.call('LRANGE', historyKey, 0, -1)) do
  if historyTime(entry) + keep > now then history[#history + 1] = entry end
end
local meta = redis.call('HMGET', metaKey, 'pv', 'ep')
local ep = meta[2] or ''
return {ep .. '.' .. (meta[1] or '0'), redis.call('HGETALL', policiesKey), history, ep, redis.call('ZCARD', allKey)}
