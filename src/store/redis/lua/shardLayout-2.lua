--[[
  shardLayout: the number of shards a pool is stored in (includes/layout.lua), recorded the first
  time a broker with shards serves the pool.

  KEYS: list `shardLayoutKeys` (the order: src/store/redis/script-keys.ts):
    meta  `P m`    meta hash of shard 0: sn the pool's shard count (absent: stored unsharded,
                   or not yet recorded)
    all   `P all`  every proxy id of shard 0
  where P = "<prefix>:{<pool>}:".

  ARGV: list `shardLayout` (the order: src/store/redis/script-args.ts):
    shards  the shard count of the caller

  Keys built in the script: none.

  Output: the pool's shard count as recorded (the caller's, when none was and the pool could take
  it); -1 when the caller has shards but the pool holds proxies stored unsharded.

  Error codes: none.
]]
-- @include "layout"

local metaKey = KEYS[{{shardLayoutKeys.meta}}]
local allKey = KEYS[{{shardLayoutKeys.all}}]

local shards = tonumber(ARGV[{{shardLayout.shards}}])

return poolLayout(metaKey, allKey, shards)
