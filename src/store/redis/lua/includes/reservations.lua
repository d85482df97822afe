--[[
  Reservations of silent workers' fallback claims (docs/spec.md §7), as the acquire and the
  renewal read them; sdk/src/engine/memory/reservations.ts reads the same rules under the same
  names. `rsv` is the reservations key when the pool has any, else nil (no read). Its fields:
  a proxy id → the worker it is reserved for; "\t<owner>\n<dk>" a domain-key of that worker's
  scope ("\t<owner>": every domain-key; "\t<owner>\n#<group>": every key of isolation group
  <group>); "\n<dk>" (or "\n#<group>") → the worker every proxy of it is reserved for;
  "\r<owner>" → when that worker's reservations hold for every caller (absent: at once). Before
  that moment, a caller that keeps to its lease's TTL (`honors`) may be granted or renewed a
  reserved pair until then, for {{gapMinMs}} ms at least.
]]

-- What a reservation for `owner` leaves `worker` at `now`: nil = nothing kept from it (none, or
-- its own); 0 = kept; a moment after `now` = granted (or renewed) only until then.
local function reservedUntil(rsv, owner, worker, honors, now)
  if not owner or owner == worker then return nil end
  if not honors then return 0 end
  local from = tonumber(redis.call('HGET', rsv, '\r' .. owner)) or 0
  if from - now < {{gapMinMs}} then return 0 end
  return from
end

-- The earlier of two limits of `reservedUntil`: kept (0) when either keeps it, free (nil) when
-- both leave it free, else the earlier moment.
local function earliest(a, b)
  if a == 0 or b == 0 then return 0 end
  if not a then return b end
  if not b then return a end
  return math.min(a, b)
end

-- The worker proxy `id` is reserved for, when that reservation covers domain-key `dk`: one of
-- its scope (`dk` itself or its isolation `group`), or any when its scope is every domain-key;
-- nil otherwise.
local function proxyOwner(rsv, id, dk, group)
  if not rsv then return nil end
  local owner = redis.call('HGET', rsv, id)
  if not owner then return nil end
  if redis.call('HEXISTS', rsv, '\t' .. owner .. '\n' .. dk) == 1 or redis.call('HEXISTS', rsv, '\t' .. owner) == 1 then return owner end
  if group ~= '' and redis.call('HEXISTS', rsv, '\t' .. owner .. '\n#' .. group) == 1 then return owner end
  return nil
end

-- Every proxy of `dk`, or of its isolation `group` ("" = none), reserved for another worker: 0
-- kept, a moment granted until, nil free (the earlier of the two).
local function domainReservedUntil(rsv, dk, group, worker, honors, now)
  if not rsv then return nil end
  local own = reservedUntil(rsv, redis.call('HGET', rsv, '\n' .. dk), worker, honors, now)
  if group == '' then return own end
  return earliest(own, reservedUntil(rsv, redis.call('HGET', rsv, '\n#' .. group), worker, honors, now))
end

-- Proxy `id` reserved for another worker for `dk`: 0 kept, a moment granted until, nil free.
local function proxyReservedUntil(rsv, id, dk, group, worker, honors, now)
  if not rsv then return nil end
  return reservedUntil(rsv, proxyOwner(rsv, id, dk, group), worker, honors, now)
end

-- Until when the pair (`id`, `dk`) may be granted or renewed to `worker` at `now`: nil = no
-- reservation limits it; 0 = kept from it; else that moment (the earlier of the proxy's
-- reservation and the domain-key's).
local function pairReservedUntil(rsv, id, dk, group, worker, honors, now)
  if not rsv then return nil end
  local a = proxyReservedUntil(rsv, id, dk, group, worker, honors, now)
  if a == 0 then return 0 end
  return earliest(a, domainReservedUntil(rsv, dk, group, worker, honors, now))
end
