--[[
  deletePolicy: delete the domain policy with this pattern; the version changes (and the set it
  replaces is kept as history) only when one was deleted.

  KEYS: list `deletePolicyKeys` (the order: src/store/redis/script-keys.ts):
    policies  `P pol`   pattern → policy JSON
    meta      `P m`     pool meta hash: pv policy version
    history   `P polh`  history: list of replaced sets, newest first (includes/policyHistory.lua)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `deletePolicy` (the order: src/store/redis/script-args.ts):
    pattern
    now       epoch ms; "" = Redis TIME
    keepMs    how long a replaced set is kept
    keepMax   the most sets kept

  Keys built in the script: none.

  Output: 1 deleted, 0 not found.

  Error codes: none.
]]
-- @include "base"
-- @include "policyHistory"

local policiesKey = KEYS[{{deletePolicyKeys.policies}}]
local metaKey = KEYS[{{deletePolicyKeys.meta}}]
local historyKey = KEYS[{{deletePolicyKeys.history}}]

local pattern = ARGV[{{deletePolicy.pattern}}]
local nowArg = ARGV[{{deletePolicy.now}}]
local keepMs = tonumber(ARGV[{{deletePolicy.keepMs}}])
local keepMax = tonumber(ARGV[{{deletePolicy.keepMax}}])

if redis.call('HEXISTS', policiesKey, pattern) == 0 then return 0 end
local now = storeNow(nowArg)
retirePolicies(policiesKey, historyKey, now, keepMs, keepMax)
redis.call('HDEL', policiesKey, pattern)
redis.call('HINCRBY', metaKey, 'pv', 1)
return 1
