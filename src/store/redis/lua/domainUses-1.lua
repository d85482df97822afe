--[[
  domainUses: the domain-keys workers leased lately (docs/store-semantics.md §domain uses), as
  recorded by acquires (includes/lately.lua); records last used before `since` are dropped.

  KEYS: list `domainUsesKeys` (the order: src/store/redis/script-keys.ts):
    uses  `P wd`    hash: "<worker>\n<dk>" → "<first use>:<last use>" (epoch ms)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `domainUses` (the order: src/store/redis/script-args.ts):
    since     epoch ms

  Keys built in the script: none.

  Output (flat): per record kept, its field and its value.

  Error codes: none.
]]
local usesKey = KEYS[{{domainUsesKeys.uses}}]
local since = tonumber(ARGV[{{domainUses.since}}])

local all = redis.call('HGETALL', usesKey)
local out, gone = {}, {}
for i = 1, #all, 2 do
  local last = tonumber(string.match(all[i + 1], ':(%d+)$')) or 0
  if last < since then
    gone[#gone + 1] = all[i]
  else
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
-- in chunks: unpack has a limit on the number of values
for i = 1, #gone, 1000 do redis.call('HDEL', usesKey, unpack(gone, i, math.min(#gone, i + 999))) end
return out
