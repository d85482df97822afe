--[[
  touchWorker: record a worker as live now (it fetched a pool snapshot: it may hold long leases
  without acquiring), so that every worker's list of live workers — and so its fallback share —
  includes it; as a worker that keeps a fallback pool (only those get reservations); and the time
  of the latest list of live workers it holds, never moved back (what the broker may assume its
  fallback shares were computed from: src/lease/list-lags.ts).

  KEYS: list `touchWorkerKeys` (the order: src/store/redis/script-keys.ts):
    workers          `P ws`    workers: zset worker id → last seen (epoch ms), bounded (includes/workers.lua)
    fallbackWorkers  `P wf`    zset worker id → the last time it said it keeps a fallback pool
    listsWorkers     `P wl`    zset worker id → the snapshot time of the latest list it holds
  where P = "<prefix>:{<pool>}:".

  ARGV: list `touchWorker` (the order: src/store/redis/script-args.ts):
    workerId
    now       epoch ms; "" = Redis TIME
    listsAt   epoch ms, the snapshot time of the latest list it holds; 0 = none said

  Keys built in the script: none.

  Output: 1.

  Error codes: none.
]]
-- @include "base"
-- @include "workers"

local workersKey = KEYS[{{touchWorkerKeys.workers}}]
local fallbackWorkersKey = KEYS[{{touchWorkerKeys.fallbackWorkers}}]
local listsWorkersKey = KEYS[{{touchWorkerKeys.listsWorkers}}]

local worker = ARGV[{{touchWorker.workerId}}]
local now, nowText = storeNow(ARGV[{{touchWorker.now}}])

seeWorker(workersKey, fallbackWorkersKey, worker, true, now, nowText)
local listsAt = ARGV[{{touchWorker.listsAt}}]
if tonumber(listsAt) > 0 and redis.call('ZADD', listsWorkersKey, 'GT', listsAt, worker) == 1 then trimWorkers(listsWorkersKey, now) end
return 1
