--[[
  domainPacing: the adaptive pacing state of domain-keys (§2): of the ones asked for, or of every
  adapted one (highest interval first) when none is asked for. Drops entries of `P ad` whose state
  expired.

  KEYS: list `domainPacingKeys` (the order: src/store/redis/script-keys.ts):
    adapted  `P ad`    adapted domain-keys (zset domain-key → adaptive interval)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `domainPacing` (the order: src/store/redis/script-args.ts), then the domain-keys to report (none = every
  adapted one):
    base    P
    limit   the most entries answered

  Keys built in the script: `P d:<dk>` (hash a adaptive interval, l learned limit, t learned at,
  d last lowered at).

  Output: flat {domainKey, adaptiveMs, learnedMs, learnedAt, loweredAt, ...}.

  Error codes: none.
]]
local adaptedKey = KEYS[{{domainPacingKeys.adapted}}]
local base = ARGV[{{domainPacing.base}}]
local limit = tonumber(ARGV[{{domainPacing.limit}}])

local first = {{argc.domainPacing}} + 1
local asked = #ARGV >= first
local keys = {}
if asked then
  for i = first, math.min(#ARGV, limit + first - 1) do keys[#keys + 1] = ARGV[i] end
else
  keys = redis.call('ZREVRANGE', adaptedKey, 0, limit - 1)
end
local out = {}
for i = 1, #keys do
  local d = redis.call('HMGET', base .. 'd:' .. keys[i], 'a', 'l', 't', 'd')
  if not asked and not d[1] then
    redis.call('ZREM', adaptedKey, keys[i])
  else
    out[#out + 1] = keys[i]
    out[#out + 1] = d[1] or '0'
    out[#out + 1] = d[2] or '0'
    out[#out + 1] = d[3] or '0'
    out[#out + 1] = d[4] or '0'
  end
end
return out
