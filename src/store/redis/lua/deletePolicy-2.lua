--[[
  deletePolicy: delete the domain policy with this pattern; the version changes only when one
  was deleted.

  KEYS[1] `P pol`   pattern → policy JSON
  KEYS[2] `P m`     pool meta hash: pv policy version
  where P = "<prefix>:{<pool>}:".

  ARGV[1] pattern

  Keys built in the script: none.

  Output: 1 deleted, 0 not found.

  Error codes: none.
]]
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[2], 'pv', 1)
return 1
