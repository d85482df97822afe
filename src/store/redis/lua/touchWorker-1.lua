--[[
  touchWorker: record a worker as live now (it fetched a pool snapshot: it may hold long leases
  without acquiring), so that every worker's list of live workers — and so its fallback share —
  includes it; and as a worker that keeps a fallback pool (only those get reservations).

  KEYS[1] `P w`     workers: hash worker id → last seen (epoch ms), and "<worker id>\31f" → the
                    last time it said it keeps a fallback pool
  where P = "<prefix>:{<pool>}:".

  ARGV[1] worker id
  ARGV[2] now (epoch ms; "" = Redis TIME)

  Keys built in the script: none.

  Output: 1.

  Error codes: none.
]]
-- @include "base"

local _, nowText = storeNow(ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], nowText, ARGV[1] .. '\31f', nowText)
return 1
