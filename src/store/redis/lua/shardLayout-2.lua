--[[
  shardLayout: the number of shards a pool is stored in (src/store/sharded), recorded in the meta
  hash of its shard 0 (the pool itself) the first time a broker with shards serves it, so that a
  broker with another POOL_SHARDS refuses the pool instead of looking for its proxies on other
  shards (which would let one proxy be stored, and leased, twice).

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
local sn = redis.call('HGET', KEYS[1], 'sn')
if sn then return tonumber(sn) end
local n = tonumber(ARGV[1])
-- an unsharded caller records nothing: the layout of every pool stored before shards existed
if n == 1 then return 1 end
if redis.call('ZCARD', KEYS[2]) > 0 then return -1 end
redis.call('HSET', KEYS[1], 'sn', n)
return n
