--[[
  What a worker held lately (docs/store-semantics.md §reportOutcomes): `P hd:<worker>\n<dk>\n<id>`
  holds until when the worker's reported outcomes on the pair (dk, id) apply: a grant or a
  renewal of a lease of the pair to that worker sets it to the lease's expiry + the
  `reportableMs` the call gave. A worker id has no spaces or newlines (the broker checks it), so the key is exact.
]]

-- The key of the hold of pair (`dk`, `id`) by `worker`.
local function heldKey(base, worker, dk, id)
  return base .. 'hd:' .. worker .. '\n' .. dk .. '\n' .. id
end

-- Record that `worker` holds (`dk`, `id`) until `exp` (epoch ms) + `reportable` ("" = nothing
-- recorded). The key holds that moment (the store clock decides, as everywhere) and expires then.
local function markHeld(base, worker, dk, id, exp, now, reportable)
  if reportable == '' or worker == '' then return end
  local untilMs = math.floor(exp + tonumber(reportable))
  if untilMs > now then redis.call('SET', heldKey(base, worker, dk, id), untilMs, 'PX', untilMs - now) end
end

-- Whether `worker` holds (`dk`, `id`) at `now`.
local function holds(base, worker, dk, id, now)
  if worker == '' then return false end
  return (tonumber(redis.call('GET', heldKey(base, worker, dk, id))) or 0) > now
end
