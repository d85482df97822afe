--[[
  ensureEpoch: the pool's epoch, created when it has none (docs/store-semantics.md §epochs). An
  epoch is written once and disappears only with the pool's state (a Redis wiped, restarted
  without persistence, failed over to a replica that missed writes). A caller that knew another
  epoch (or knows writes were lost) has lost track of leases still in use: grants are held from
  `since` for the longer of holdMs and the pool's recorded longest lease TTL lately (never
  shortened; a request repeated with the same `since` holds no longer).

  KEYS: list `ensureEpochKeys` (the order: src/store/redis/script-keys.ts):
    meta  `P m`     pool meta hash: ep epoch, es grants held until (epoch ms), lt and lta the
                    longest lease TTL lately (includes/lately.lua)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `ensureEpoch` (the order: src/store/redis/script-args.ts):
    expected  the epoch the caller knew ("" = none)
    holdMs    the longest lease TTL the caller knows to have been granted lately
    lost      1 when the caller knows writes were lost (hold even if the epoch is the same)
    since     when the loss was noticed (epoch ms; "" = now)
    now       epoch ms; "" = Redis TIME

  Keys built in the script: none.

  Output: {epoch, grantsFrom}.

  Error codes: none.
]]
-- @include "base"
-- @include "lately"

local metaKey = KEYS[{{ensureEpochKeys.meta}}]

local expected = ARGV[{{ensureEpoch.expected}}]
local holdMs = tonumber(ARGV[{{ensureEpoch.holdMs}}])
local lost = ARGV[{{ensureEpoch.lost}}]
local now, _, nowUs = storeNow(ARGV[{{ensureEpoch.now}}])
local since = tonumber(ARGV[{{ensureEpoch.since}}]) or now

local m = redis.call('HMGET', metaKey, 'ep', 'es', 'lt', 'lta')
local ep, es = m[1], tonumber(m[2]) or 0
if not ep then
  -- the store clock in µs: a new id after every loss (the clock keeps going)
  ep = string.format('%d', nowUs)
  es = now
  if expected ~= '' then es = since + holdMs end
  redis.call('HSET', metaKey, 'ep', ep, 'es', es)
elseif lost == '1' or (expected ~= '' and expected ~= ep) then
  local hold = math.max(holdMs, longestTtl(m[3], m[4], now))
  if since + hold > es then
    es = since + hold
    redis.call('HSET', metaKey, 'es', es)
  end
end
return {ep, es}
