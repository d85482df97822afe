--[[
  listPolicies: the pool's policies with their version, read together.

  KEYS[1] `P pol`   pattern → policy JSON
  KEYS[2] `P m`     pool meta hash: pv policy version (absent = "0")
  where P = "<prefix>:{<pool>}:".

  ARGV: none.

  Keys built in the script: none.

  Output: {version, pattern1, json1, pattern2, json2, ...}.

  Error codes: none.
]]
local out = redis.call('HGETALL', KEYS[1])
table.insert(out, 1, redis.call('HGET', KEYS[2], 'pv') or '0')
return out
