-- The busy index's stale entries are dropped by one acquire in this many.
local BUSY_GC_ONE_IN = 16

-- Step dropStaleBusy (docs/store-semantics.md §acquire): the busy index is read as "entries >
-- now", so stale entries are invisible; they are dropped from time to time (1 acquire in
-- BUSY_GC_ONE_IN) rather than on every call.
local function dropStaleBusy(busy, nowText)
  if math.random(BUSY_GC_ONE_IN) == 1 then redis.call('ZREMRANGEBYSCORE', busy, '-inf', nowText) end
end
