--[[
  rememberWorkers: record workers as seen at the times given, never moving a later record back
  (ZADD GT): how a broker puts back what it knew of a pool's workers after the store lost its
  state, so that every replica still sees which of them went silent (docs/spec.md §7).

  KEYS: list `rememberWorkersKeys` (the order: src/store/redis/script-keys.ts):
    workers          `P ws`    workers: zset worker id → last seen (epoch ms), bounded (includes/workers.lua)
    fallbackWorkers  `P wf`    zset worker id → the last time it said it keeps a fallback pool
    yieldingWorkers  `P wy`    zset worker id → the last time it said it yields its leases
    listsWorkers     `P wl`    zset worker id → the snapshot time of the latest list it holds
    heardWorkers     `P wh`    zset worker id → the broker time of the latest pong it received
  where P = "<prefix>:{<pool>}:".

  ARGV: list `rememberWorkers` (now: epoch ms, "" = Redis TIME), then a list `workerSeen` per
  worker: its id, when it was last seen, the last time it kept a fallback pool, the last time it
  yielded its leases, the time of the latest list it held, the broker time of the latest pong it
  received (0 = never). Its claims are put back by the caller (one key per worker: `P wc:<id>`)
  (the order: src/store/redis/script-args.ts).

  Keys built in the script: none.

  Output: 1.

  Error codes: none.
]]
-- @include "base"
-- @include "workers"

local workersKey = KEYS[{{rememberWorkersKeys.workers}}]
local fallbackWorkersKey = KEYS[{{rememberWorkersKeys.fallbackWorkers}}]
local yieldingWorkersKey = KEYS[{{rememberWorkersKeys.yieldingWorkers}}]
local listsWorkersKey = KEYS[{{rememberWorkersKeys.listsWorkers}}]
local heardKey = KEYS[{{rememberWorkersKeys.heardWorkers}}]

local now = storeNow(ARGV[{{rememberWorkers.now}}])
local seen, fallback, yielding, lists, heard = {}, {}, {}, {}, {}

-- Add `at` → `worker` to the ZADD arguments `list` when `at` is a time (> 0).
local function note(list, at, worker)
  if tonumber(at) > 0 then
    list[#list + 1] = at
    list[#list + 1] = worker
  end
end

-- Record the ZADD arguments `list` in the zset `key`, never moving a later record back, then trim it.
local function remember(key, list)
  if #list == 0 then return end
  redis.call('ZADD', key, 'GT', unpack(list))
  trimWorkers(key, now)
end

for at = {{argc.rememberWorkers}}, #ARGV - {{argc.workerSeen}}, {{argc.workerSeen}} do
  local worker = ARGV[at + {{workerSeen.workerId}}]
  seen[#seen + 1] = ARGV[at + {{workerSeen.lastSeen}}]
  seen[#seen + 1] = worker
  note(fallback, ARGV[at + {{workerSeen.fallbackAt}}], worker)
  note(yielding, ARGV[at + {{workerSeen.yieldsAt}}], worker)
  note(lists, ARGV[at + {{workerSeen.listsAt}}], worker)
  note(heard, ARGV[at + {{workerSeen.heardAt}}], worker)
end
remember(workersKey, seen)
remember(fallbackWorkersKey, fallback)
remember(yieldingWorkersKey, yielding)
remember(listsWorkersKey, lists)
remember(heardKey, heard)
return 1
