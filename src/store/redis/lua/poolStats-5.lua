--[[
  poolStats: proxy counts by state and the number of live workers, from one consistent moment.

  KEYS[1] `P all`   every proxy id
  KEYS[2] `P idx`   ACTIVE index
  KEYS[3] `P q`     quarantine zset
  KEYS[4] `P bl`    blacklist set
  KEYS[5] `P ws`    workers: zset worker id → last seen (epoch ms)
  where P = "<prefix>:{<pool>}:".

  ARGV[1] liveSinceMs: workers that acquired at or after it are live

  Keys built in the script: none.

  Output: {total, active, quarantined, blacklisted, liveWorkers}.

  Error codes: none.
]]
local live = redis.call('ZCOUNT', KEYS[5], ARGV[1], '+inf')
return {
  redis.call('ZCARD', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
  redis.call('SCARD', KEYS[4]),
  live,
}
