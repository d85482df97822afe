--[[
  touchWorker: record a worker as live now (it fetched a pool snapshot: it may hold long leases
  without acquiring), so that every worker's list of live workers — and so its fallback share —
  includes it; and as a worker that keeps a fallback pool (only those get reservations).

  KEYS[1] `P w`     workers: hash worker id → last seen (epoch ms)
  KEYS[2] `P wf`    workers with a fallback pool: hash worker id → last snapshot (epoch ms)
  where P = "<prefix>:{<pool>}:".

  ARGV[1] worker id
  ARGV[2] now (epoch ms; "" = Redis TIME)

  Keys built in the script: none.

  Output: 1.

  Error codes: none.
]]
-- @include "base"

local _, nowText = storeNow(ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], nowText)
if redis.call('HSET', KEYS[2], ARGV[1], nowText) == 1 then
  -- a new worker id: forget the ones without a snapshot for a week (the hash only grows with new ids)
  local now = tonumber(nowText)
  local all = redis.call('HGETALL', KEYS[2])
  for i = 2, #all, 2 do
    if tonumber(all[i]) < now - 604800000 then redis.call('HDEL', KEYS[2], all[i - 1]) end
  end
end
return 1
