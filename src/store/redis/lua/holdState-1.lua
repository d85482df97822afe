--[[
  holdState: whether grants in the pool are held after a loss of its state, and the longest lease
  TTL granted or renewed in it lately (what a hold waits for; docs/store-semantics.md §epochs).

  KEYS: list `holdStateKeys` (the order: src/store/redis/script-keys.ts):
    meta  `P m`     pool meta hash: es grants held until (epoch ms), lt and lta (includes/lately.lua),
                    ep and pv the epoch and the policy counter
  where P = "<prefix>:{<pool>}:".

  ARGV: list `holdState` (the order: src/store/redis/script-args.ts):
    now       epoch ms; "" = Redis TIME

  Keys built in the script: none.

  Output: {heldUntil (0 = not held), longestTtlMs (0 = none lately), policy version "<ep>.<pv>"}.

  Error codes: none.
]]
-- @include "base"
-- @include "lately"

local metaKey = KEYS[{{holdStateKeys.meta}}]
local now = storeNow(ARGV[{{holdState.now}}])
local m = redis.call('HMGET', metaKey, 'es', 'lt', 'lta', 'ep', 'pv')
local es = tonumber(m[1]) or 0
if es <= now then es = 0 end
return {es, longestTtl(m[2], m[3], now), (m[4] or '') .. '.' .. (m[5] or '0')}
