--[[
  poolStats: proxy counts by state and the number of live workers, from one consistent moment.

  KEYS[1] `P all`   every proxy id
  KEYS[2] `P idx`   ACTIVE index
  KEYS[3] `P q`     quarantine zset
  KEYS[4] `P bl`    blacklist set
  KEYS[5] `P w`     workers: hash worker id → last acquire (epoch ms)
  where P = "<prefix>:{<pool>}:".

  ARGV[1] liveSinceMs: workers that acquired at or after it are live

  Keys built in the script: none.

  Output: {total, active, quarantined, blacklisted, liveWorkers}.

  Error codes: none.
]]
local since = tonumber(ARGV[1])
local live = 0
local workers = redis.call('HGETALL', KEYS[5])
for i = 2, #workers, 2 do
  if tonumber(workers[i]) >= since then live = live + 1 end
end
return {
  redis.call('ZCARD', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
  redis.call('SCARD', KEYS[4]),
  live,
}
