--[[
  setPolicy: create or replace the domain policy with this pattern; the version changes.

  KEYS[1] `P pol`   pattern → policy JSON
  KEYS[2] `P m`     pool meta hash: pv policy version (HINCRBY; absent = "0")
  where P = "<prefix>:{<pool>}:".

  ARGV[1] pattern
  ARGV[2] policy JSON

  Keys built in the script: none.

  Output: the new version (integer).

  Error codes: none.
]]
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HINCRBY', KEYS[2], 'pv', 1)
