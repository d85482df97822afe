--[[
  touchWorker: record a worker as live now (it fetched a pool snapshot: it may hold long leases
  without acquiring), so that every worker's list of live workers — and so its fallback share —
  includes it; and as a worker that keeps a fallback pool (only those get reservations).

  KEYS[1] `P ws`    workers: zset worker id → last seen (epoch ms), bounded (includes/workers.lua)
  KEYS[2] `P wf`    zset worker id → the last time it said it keeps a fallback pool
  where P = "<prefix>:{<pool>}:".

  ARGV[1] worker id
  ARGV[2] now (epoch ms; "" = Redis TIME)

  Keys built in the script: none.

  Output: 1.

  Error codes: none.
]]
-- @include "base"
-- @include "workers"

local now, nowText = storeNow(ARGV[2])
seeWorker(KEYS[1], KEYS[2], ARGV[1], true, now, nowText)
return 1
