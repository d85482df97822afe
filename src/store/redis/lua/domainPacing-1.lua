--[[
  domainPacing: the adaptive pacing state of domain-keys (§2): of the ones asked for, or of every
  adapted one (highest interval first) when none is asked for. Drops entries of `P ad` whose state
  expired.

  KEYS[1] `P ad`    adapted domain-keys (zset domain-key → adaptive interval)
  where P = "<prefix>:{<pool>}:".

  ARGV[1] P
  ARGV[2] limit: the most entries answered
  ARGV[3..] domain-keys to report (none = every adapted one)

  Keys built in the script: `P d:<dk>` (hash a adaptive interval, l learned limit, t learned at,
  d last lowered at).

  Output: flat {domainKey, adaptiveMs, learnedMs, learnedAt, loweredAt, ...}.

  Error codes: none.
]]
local base, limit = ARGV[1], tonumber(ARGV[2])
local keys = {}
if #ARGV >= 3 then
  for i = 3, math.min(#ARGV, limit + 2) do keys[#keys + 1] = ARGV[i] end
else
  keys = redis.call('ZREVRANGE', KEYS[1], 0, limit - 1)
end
local out = {}
for i = 1, #keys do
  local d = redis.call('HMGET', base .. 'd:' .. keys[i], 'a', 'l', 't', 'd')
  if #ARGV < 3 and not d[1] then
    redis.call('ZREM', KEYS[1], keys[i])
  else
    out[#out + 1] = keys[i]
    out[#out + 1] = d[1] or '0'
    out[#out + 1] = d[2] or '0'
    out[#out + 1] = d[3] or '0'
    out[#out + 1] = d[4] or '0'
  end
end
return out
