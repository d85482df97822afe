--[[
  setPolicy: create or replace the domain policy with this pattern; the version changes and the
  set it replaces is kept as history.

  KEYS[1] `P pol`   pattern → policy JSON
  KEYS[2] `P m`     pool meta hash: pv policy version (HINCRBY; absent = "0")
  KEYS[3] `P polh`  history: list of replaced sets, newest first (includes/policyHistory.lua)
  where P = "<prefix>:{<pool>}:".

  ARGV[1] pattern
  ARGV[2] policy JSON
  ARGV[3] now (epoch ms; "" = Redis TIME)
  ARGV[4] keepMs: how long a replaced set is kept
  ARGV[5] the most sets kept

  Keys built in the script: none.

  Output: the new version (integer).

  Error codes: none.
]]
-- @include "base"
-- @include "policyHistory"

local now = storeNow(ARGV[3])
retirePolicies(KEYS[1], KEYS[3], now, tonumber(ARGV[4]), tonumber(ARGV[5]))
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HINCRBY', KEYS[2], 'pv', 1)
