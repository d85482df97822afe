--[[
  addProxies: add new proxies (ACTIVE, initial score, in the index) or replace url, tier and
  labels of known ones (state and score kept; an ACTIVE proxy moves to its new tier and label
  indexes). Given the caller's shard count, it checks (and records) the pool's shard layout in the
  same step (includes/layout.lua), so that no proxy is ever stored in shard 0 of a sharded pool
  without the layout recorded beside it, even when the store lost its keys just before: a broker
  that checked the layout moments before a wipe, then imported the proxies again, would otherwise
  leave them looking stored unsharded, and every broker would refuse the pool.

  KEYS: list `addProxiesKeys` (the order: src/store/redis/script-keys.ts):
    all    `P all`   every proxy id (score 0)
    index  `P idx`   ACTIVE index (id → −score)
    meta   `P m`     meta hash (sn the shard count, see includes/layout.lua; xs, includes/exits.lua)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `addProxies` (the order: src/store/redis/script-args.ts), then a list `proxySpec` per proxy:
    base          P
    initialScore
    shards        the caller's shard count when P is a pool's shard 0 (1 = unsharded), "" = no
                  check (another shard of a pool)
  and per proxy: id, url, tier, labels ("\n" then "k=v\n" per label).

  Keys built in the script: `P p:<id>`, `P idx:t:<tier>`, `P idx:l:<k>=<v>`, `P h:<host>` (the
  proxies of a host, G9: includes/exitRecord.lua).

  Output: the pool's shard layout as poolLayout answers it (the argument shards itself when there
  was no check), then, when it is the caller's, one integer per proxy, in order: 1 added, 0 updated;
  when it is not, nothing more (nothing was written).

  Error codes: none.
]]
-- @include "base"
-- @include "proxy"
-- @include "layout"
-- @include "events"
-- @include "exitRecord"

local allKey = KEYS[{{addProxiesKeys.all}}]
local indexKey = KEYS[{{addProxiesKeys.index}}]
local metaKey = KEYS[{{addProxiesKeys.meta}}]

local base = ARGV[{{addProxies.base}}]
local initial = tonumber(ARGV[{{addProxies.initialScore}}])
local shards = ARGV[{{addProxies.shards}}]
local out = {}
if shards == '' then
  out[1] = ''
else
  local n = tonumber(shards)
  out[1] = poolLayout(metaKey, allKey, n)
  if out[1] ~= n then return out end
end
for at = {{argc.addProxies}}, #ARGV - 1, {{argc.proxySpec}} do
  local id = ARGV[at + {{proxySpec.id}}]
  local url = ARGV[at + {{proxySpec.url}}]
  local tier = ARGV[at + {{proxySpec.tier}}]
  local labels = ARGV[at + {{proxySpec.labels}}]
  local key = base .. 'p:' .. id
  local v = redis.call('HMGET', key, 'st', 't', 's', 'l')
  if v[1] then
    redis.call('HSET', key, 'u', url, 't', tier, 'l', labels)
    if v[1] == 'A' and (v[2] ~= tier or v[4] ~= labels) then
      indexRem(base, indexKey, v[2], v[4], id)
      indexAdd(base, indexKey, tier, labels, tonumber(v[3]), id)
    end
    out[#out + 1] = 0
  else
    redis.call('HSET', key, 'u', url, 't', tier, 'l', labels, 's', initial, 'st', 'A', 'lt', '0',
      'sc', '0', 'fc', '0', 'lb', '', 'la', '0', 'qu', '0', 'qc', '0')
    redis.call('ZADD', allKey, 0, id)
    indexAdd(base, indexKey, tier, labels, initial, id)
    noteHost(base, metaKey, id)
    out[#out + 1] = 1
  end
end
return out
