--[[
  reserve: replace the pool's reservations. A worker that went silent may be leasing the proxies
  of its rendezvous share from its fallback pool; while it does, those proxies are granted to it
  alone (docs/spec.md §7).

  KEYS: list `reserveKeys` (the order: src/store/redis/script-keys.ts):
    reserved  `P rsv`   hash: proxy id → the worker it is reserved for
  where P = "<prefix>:{<pool>}:".

  ARGV: pairs of proxy id, worker id (none: no reservation left); no list of named arguments.

  Keys built in the script: none.

  Output: the number of reservations.

  Error codes: none.
]]
local reservedKey = KEYS[{{reserveKeys.reserved}}]

redis.call('DEL', reservedKey)
-- in chunks: unpack has a limit on the number of values
local CHUNK = 1000
for i = 1, #ARGV - 1, CHUNK do
  redis.call('HSET', reservedKey, unpack(ARGV, i, math.min(#ARGV, i + CHUNK - 1)))
end
return math.floor(#ARGV / 2)
