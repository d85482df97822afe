--[[
  listProxies: one page of proxies in id order (byte order), ids greater than `after`.

  KEYS: list `listProxiesKeys` (the order: src/store/redis/script-keys.ts):
    all  `P all`   every proxy id (score 0, so ZRANGEBYLEX orders by id)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `listProxies` (the order: src/store/redis/script-args.ts):
    base    P
    after   "" = from the start
    size    page size (>= 1)

  Keys built in the script: `P p:<id>`.

  Output: {more 0|1, then per proxy 13 entries: id, url, tier, labels, score, state,
  latencyEwma, successes, failures, lastUsedBy, lastUsedAt, quarantineUntil, quarantineCount, exitIp}.

  Error codes: none.
]]
local VIEW = {'u', 't', 'l', 's', 'st', 'lt', 'sc', 'fc', 'lb', 'la', 'qu', 'qc', 'xi'}

local allKey = KEYS[{{listProxiesKeys.all}}]
local base = ARGV[{{listProxies.base}}]
local after = ARGV[{{listProxies.after}}]
local size = tonumber(ARGV[{{listProxies.size}}])

local from = '-'
if after ~= '' then from = '(' .. after end
local ids = redis.call('ZRANGEBYLEX', allKey, from, '+', 'LIMIT', 0, size + 1)
local out = {0}
if #ids > size then out[1] = 1 end
for i = 1, math.min(#ids, size) do
  local v = redis.call('HMGET', base .. 'p:' .. ids[i], unpack(VIEW))
  out[#out + 1] = ids[i]
  for j = 1, #VIEW do out[#out + 1] = v[j] end
end
return out
