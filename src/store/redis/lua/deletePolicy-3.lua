--[[
  deletePolicy: delete the domain policy with this pattern; the version changes (and the set it
  replaces is kept as history) only when one was deleted.

  KEYS[1] `P pol`   pattern → policy JSON
  KEYS[2] `P m`     pool meta hash: pv policy version
  KEYS[3] `P polh`  history: list of replaced sets, newest first (includes/policyHistory.lua)
  where P = "<prefix>:{<pool>}:".

  ARGV[1] pattern
  ARGV[2] now (epoch ms; "" = Redis TIME)
  ARGV[3] keepMs: how long a replaced set is kept
  ARGV[4] the most sets kept

  Keys built in the script: none.

  Output: 1 deleted, 0 not found.

  Error codes: none.
]]
-- @include "base"
-- @include "policyHistory"

if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
local now = storeNow(ARGV[2])
retirePolicies(KEYS[1], KEYS[3], now, tonumber(ARGV[3]), tonumber(ARGV[4]))
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HINCRBY', KEYS[2], 'pv', 1)
return 1
