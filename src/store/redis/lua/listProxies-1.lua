--[[
  listProxies: one page of proxies in id order (byte order), ids greater than `after`.

  KEYS[1] `P all`   every proxy id (score 0, so ZRANGEBYLEX orders by id)
  where P = "<prefix>:{<pool>}:".

  ARGV[1] P
  ARGV[2] after ("" = from the start)
  ARGV[3] page size (>= 1)

  Keys built in the script: `P p:<id>`.

  Output: {more 0|1, then per proxy 13 entries: id, url, tier, labels, score, state,
  latencyEwma, successes, failures, lastUsedBy, lastUsedAt, quarantineUntil, quarantineCount}.

  Error codes: none.
]]
local VIEW = {'u', 't', 'l', 's', 'st', 'lt', 'sc', 'fc', 'lb', 'la', 'qu', 'qc'}

local size = tonumber(ARGV[3])
local from = '-'
if ARGV[2] ~= '' then from = '(' .. ARGV[2] end
local ids = redis.call('ZRANGEBYLEX', KEYS[1], from, '+', 'LIMIT', 0, size + 1)
local out = {0}
if #ids > size then out[1] = 1 end
for i = 1, math.min(#ids, size) do
  local v = redis.call('HMGET', ARGV[1] .. 'p:' .. ids[i], unpack(VIEW))
  out[#out + 1] = ids[i]
  for j = 1, #VIEW do out[#out + 1] = v[j] end
end
return out
