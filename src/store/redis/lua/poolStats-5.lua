--[[
  poolStats: proxy counts by state and the number of live workers, from one consistent moment.

  KEYS: list `poolStatsKeys` (the order: src/store/redis/script-keys.ts):
    all         `P all`   every proxy id
    index       `P idx`   ACTIVE index
    quarantine  `P q`     quarantine zset
    blacklist   `P bl`    blacklist set
    workers     `P ws`    workers: zset worker id → last seen (epoch ms)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `poolStats` (the order: src/store/redis/script-args.ts):
    liveSince   epoch ms: workers that acquired at or after it are live

  Keys built in the script: none.

  Output: {total, active, quarantined, blacklisted, liveWorkers}.

  Error codes: none.
]]
local allKey = KEYS[{{poolStatsKeys.all}}]
local indexKey = KEYS[{{poolStatsKeys.index}}]
local quarantineKey = KEYS[{{poolStatsKeys.quarantine}}]
local blacklistKey = KEYS[{{poolStatsKeys.blacklist}}]
local workersKey = KEYS[{{poolStatsKeys.workers}}]
local liveSince = ARGV[{{poolStats.liveSince}}]

local live = redis.call('ZCOUNT', workersKey, liveSince, '+inf')
return {
  redis.call('ZCARD', allKey),
  redis.call('ZCARD', indexKey),
  redis.call('ZCARD', quarantineKey),
  redis.call('SCARD', blacklistKey),
  live,
}
