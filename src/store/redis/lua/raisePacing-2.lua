--[[
  raisePacing: raise a domain-key's adaptive pacing to what another shard of the same pool learned
  (src/store/sharded: a sharded pool's shards adapt on their own, and a raise on one is spread to
  the others, so that a site's learned limit holds for every proxy of the pool). Only raises: an
  interval or a learned limit lower than the shard's own changes nothing, so spreads that cross
  converge on the highest.

  KEYS: list `raisePacingKeys` (the order: src/store/redis/script-keys.ts):
    pacing   `P d:<dk>` adaptive pacing of the domain-key (hash a interval, l learned limit,
             t learned at, d last lowered at)
    adapted  `P ad`     adapted domain-keys (zset domain-key → interval)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `raisePacing` (the order: src/store/redis/script-args.ts):
    domainKey
    adaptiveMs  adaptive interval
    learnedMs   learned limit
    learnedAt   epoch ms
    now         epoch ms; "" = Redis TIME

  Keys built in the script: none.

  Output: 1 when something was raised, else 0.

  Error codes: none.
]]
-- @include "base"

local pacingKey = KEYS[{{raisePacingKeys.pacing}}]
local adaptedKey = KEYS[{{raisePacingKeys.adapted}}]

local dk = ARGV[{{raisePacing.domainKey}}]
local na = tonumber(ARGV[{{raisePacing.adaptiveMs}}])
local nl = tonumber(ARGV[{{raisePacing.learnedMs}}])
local nt = tonumber(ARGV[{{raisePacing.learnedAt}}])
local now = storeNow(ARGV[{{raisePacing.now}}])
local d = redis.call('HMGET', pacingKey, 'a', 'l', 't')
local a, l, t = tonumber(d[1]) or 0, tonumber(d[2]) or 0, tonumber(d[3]) or 0
-- a learned limit past the adaptive memory counts for nothing (as in adaptDomain)
if l > 0 and now - t >= {{adaptiveMemoryMs}} then l = 0 end
local set = {}
if na > a then
  set[1], set[2] = 'a', na
  redis.call('ZADD', adaptedKey, na, dk)
end
if nl > l or (nl == l and nl > 0 and nt > t) then
  set[#set + 1] = 'l'
  set[#set + 1] = nl
  set[#set + 1] = 't'
  set[#set + 1] = nt
end
if #set == 0 then return 0 end
redis.call('HSET', pacingKey, unpack(set))
redis.call('PEXPIRE', pacingKey, {{adaptiveMemoryMs}} + DAY_MS)
return 1
