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

  Identity migration (docs/spec.md §11): an id `user@host:port` that is not stored, while
  `host:port` is stored with username `user` in its URL (a proxy added before ids carried
  usernames), is that proxy: it is updated under `host:port`. Usernames compare percent-decoded.

  Output: the pool's shard layout as poolLayout answers it (the argument shards itself when there
  was no check), then, when it is the caller's, one entry per proxy, in order: 1 added, 0 updated,
  or the id it was updated under when that is another (the legacy `host:port`); when it is not,
  nothing more (nothing was written).

  Error codes: none.
]]
-- @include "base"
-- @include "proxy"
-- @include "layout"
-- @include "events"
-- @include "exitRecord"

-- Percent-decoded text.
local function unescape(s)
  return (string.gsub(s, '%%(%x%x)', function(h) return string.char(tonumber(h, 16)) end))
end

-- The id a proxy `id` is stored under: itself, or its legacy `host:port` (the header above).
local function storedId(base, id)
  local at = string.find(id, '@', 1, true)
  if not at or redis.call('EXISTS', base .. 'p:' .. id) == 1 then return id end
  local legacy = string.sub(id, at + 1)
  local url = redis.call('HGET', base .. 'p:' .. legacy, 'u')
  if not url then return id end
  local auth = string.match(url, '^[^/]*//([^@/]*)@')
  local user = auth and string.match(auth, '^[^:]*')
  if user and unescape(user) == unescape(string.sub(id, 1, at - 1)) then return legacy end
  return id
end

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
  local given = ARGV[at + {{proxySpec.id}}]
  local id = storedId(base, given)
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
    out[#out + 1] = id == given and 0 or id
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
