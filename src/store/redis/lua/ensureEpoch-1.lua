--[[
  ensureEpoch: the pool's epoch, created when it has none (docs/store-semantics.md §epochs). An
  epoch is written once and disappears only with the pool's state (a Redis wiped, restarted
  without persistence, failed over to a replica that missed writes). A caller that knew another
  epoch (or knows writes were lost) has lost track of leases still in use: grants are held until
  now + holdMs (never shortened).

  KEYS[1] `P m`     pool meta hash: ep epoch, es grants held until (epoch ms)
  where P = "<prefix>:{<pool>}:".

  ARGV[1] expected: the epoch the caller knew ("" = none)
  ARGV[2] holdMs
  ARGV[3] lost: 1 when the caller knows writes were lost (hold even if the epoch is the same)
  ARGV[4] now (epoch ms; "" = Redis TIME)

  Keys built in the script: none.

  Output: {epoch, grantsFrom}.

  Error codes: none.
]]
-- @include "base"

local now, _, nowUs = storeNow(ARGV[4])
local hold = tonumber(ARGV[2])
local m = redis.call('HMGET', KEYS[1], 'ep', 'es')
local ep, es = m[1], tonumber(m[2]) or 0
if not ep then
  -- the store clock in µs: a new id after every loss (the clock keeps going)
  ep = string.format('%d', nowUs)
  es = now
  if ARGV[1] ~= '' then es = now + hold end
  redis.call('HSET', KEYS[1], 'ep', ep, 'es', es)
elseif ARGV[3] == '1' or (ARGV[1] ~= '' and ARGV[1] ~= ep) then
  if now + hold > es then
    es = now + hold
    redis.call('HSET', KEYS[1], 'es', es)
  end
end
return {ep, es}
