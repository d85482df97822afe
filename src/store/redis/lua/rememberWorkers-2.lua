--[[
  rememberWorkers: record workers as seen at the times given, never moving a later record back
  (ZADD GT): how a broker puts back what it knew of a pool's workers after the store lost its
  state, so that every replica still sees which of them went silent (docs/spec.md §7).

  KEYS[1] `P ws`    workers: zset worker id → last seen (epoch ms), bounded (includes/workers.lua)
  KEYS[2] `P wf`    zset worker id → the last time it said it keeps a fallback pool
  where P = "<prefix>:{<pool>}:".

  ARGV[1] now (epoch ms; "" = Redis TIME)
  ARGV[2..] per worker: id, last seen, last time it kept a fallback pool (0 = never)

  Keys built in the script: none.

  Output: 1.

  Error codes: none.
]]
-- @include "base"
-- @include "workers"

local now = storeNow(ARGV[1])
local seen, fallback = {}, {}
for i = 2, #ARGV - 2, 3 do
  seen[#seen + 1] = ARGV[i + 1]
  seen[#seen + 1] = ARGV[i]
  if tonumber(ARGV[i + 2]) > 0 then
    fallback[#fallback + 1] = ARGV[i + 2]
    fallback[#fallback + 1] = ARGV[i]
  end
end
if #seen > 0 then
  redis.call('ZADD', KEYS[1], 'GT', unpack(seen))
  trimWorkers(KEYS[1], now)
end
if #fallback > 0 then
  redis.call('ZADD', KEYS[2], 'GT', unpack(fallback))
  trimWorkers(KEYS[2], now)
end
return 1
