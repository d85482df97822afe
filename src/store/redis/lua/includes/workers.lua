--[[
  The workers a pool has seen: `P ws` (zset worker id → last seen, epoch ms), `P wf` (zset
  worker id → the last time it said it keeps a fallback pool) and `P wy` (zset worker id → the
  last time it said it yields its leases when the broker is unreachable). Both are bounded: ids not seen for
  a week go, and beyond {{maxWorkers}} ids the least recently seen go first, so a client that
  invents worker ids costs O(log n) per acquire and a bounded amount of memory.
  Needs the include base.
]]

-- Trim one worker zset: ids older than a week, then the oldest beyond the cap.
local function trimWorkers(key, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. (now - WEEK_MS))
  local n = redis.call('ZCARD', key)
  if n > {{maxWorkers}} then redis.call('ZREMRANGEBYRANK', key, 0, n - {{maxWorkers}} - 1) end
end

-- Record `worker` as seen now in `ws` (and in `wf` when it keeps a fallback pool); a new id trims.
local function seeWorker(ws, wf, worker, fallback, now, nowText)
  if redis.call('ZADD', ws, nowText, worker) == 1 then trimWorkers(ws, now) end
  if fallback and redis.call('ZADD', wf, nowText, worker) == 1 then trimWorkers(wf, now) end
end

-- Record `worker` as one that yields its leases when the broker is unreachable (`wy`); a new id trims.
local function seeYielding(wy, worker, now, nowText)
  if redis.call('ZADD', wy, nowText, worker) == 1 then trimWorkers(wy, now) end
end
