--[[
  The shard layout of a pool (src/store/sharded): its shard count, recorded as field sn of the
  meta hash of its shard 0 (the pool itself) by the first broker with shards that serves it or
  adds proxies to it, so that a broker with another POOL_SHARDS refuses the pool instead of
  looking for its proxies on other shards (which would let one proxy be stored, and leased,
  twice).
]]

-- The layout of the pool whose shard 0 has meta hash `meta` and proxy set `all`, as a caller
-- with `n` shards finds it: the count recorded (the caller's, recorded now, when none was and
-- the pool could take it); 1 for an unsharded caller of a pool with none recorded (it records
-- nothing: the layout of every pool stored before shards existed); -1 when a caller with shards
-- finds proxies stored unsharded.
local function poolLayout(meta, all, n)
  local sn = redis.call('HGET', meta, 'sn')
  if sn then return tonumber(sn) end
  if n == 1 then return 1 end
  if redis.call('ZCARD', all) > 0 then return -1 end
  redis.call('HSET', meta, 'sn', n)
  return n
end
