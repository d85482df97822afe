--[[
  setPolicy: create or replace the domain policy with this pattern; the version changes and the
  set it replaces is kept as history.

  KEYS: list `setPolicyKeys` (the order: src/store/redis/script-keys.ts):
    policies  `P pol`   pattern → policy JSON
    meta      `P m`     pool meta hash: pv policy version (HINCRBY; absent = "0")
    history   `P polh`  history: list of replaced sets, newest first (includes/policyHistory.lua)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `setPolicy` (the order: src/store/redis/script-args.ts):
    pattern
    json      the policy
    now       epoch ms; "" = Redis TIME
    keepMs    how long a replaced set is kept
    keepMax   the most sets kept

  Keys built in the script: none.

  Output: the new version (integer).

  Error codes: none.
]]
-- @include "base"
-- @include "policyHistory"

local policiesKey = KEYS[{{setPolicyKeys.policies}}]
local metaKey = KEYS[{{setPolicyKeys.meta}}]
local historyKey = KEYS[{{setPolicyKeys.history}}]

local pattern = ARGV[{{setPolicy.pattern}}]
local json = ARGV[{{setPolicy.json}}]
local now = storeNow(ARGV[{{setPolicy.now}}])
local keepMs = tonumber(ARGV[{{setPolicy.keepMs}}])
local keepMax = tonumber(ARGV[{{setPolicy.keepMax}}])

retirePolicies(policiesKey, historyKey, now, keepMs, keepMax)
redis.call('HSET', policiesKey, pattern, json)
return redis.call('HINCRBY', metaKey, 'pv', 1)
