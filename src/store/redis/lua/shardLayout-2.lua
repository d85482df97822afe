--[[
  shardLayout: the number of shards a pool is stored in (includes/layout.lua), recorded the first
  time a broker with shards serves the pool.

  KEYS[1] `P m`    meta hash of shard 0: sn the pool's shard count (absent: stored unsharded,
                   or not yet recorded)
  KEYS[2] `P all`  every proxy id of shard 0
  where P = "<prefix>:{<pool>}:".

  ARGV[1] the shard count of the caller

  Keys built in the script: none.

  Output: the pool's shard count as recorded (the caller's, when none was and the pool could take
  it); -1 when the caller has shards but the pool holds proxies stored unsharded.

  Error codes: none.
]]
-- @include "layout"

return poolLayout(KEYS[1], KEYS[2], tonumber(ARGV[1]))
