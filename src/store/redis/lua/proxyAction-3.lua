--[[
  proxyAction: an admin's action on proxies of a pool (docs/store-semantics.md §admin).
    D disable: DISABLED, out of the indexes (and out of a quarantine); live leases run out
    E enable: a DISABLED proxy → ACTIVE with its score
    B ban for ttlMs: for one domain-key, the pair's ban (as after a BLOCKED); for all (domain-key
      ""), a quarantine of that length (never shorter than one already running) that does not
      count (it comes back with its own score)
    U unban: for one domain-key, the pair's ban lifted; for all, a QUARANTINED proxy → ACTIVE
      (its quarantine count kept)

  KEYS: list `proxyActionKeys` (the order: src/store/redis/script-keys.ts):
    index       `P idx`   ACTIVE index
    quarantine  `P q`     quarantine zset
    meta        `P m`     pool meta hash (qn: earliest quarantine return)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `proxyAction` (the order: src/store/redis/script-args.ts), then the proxy ids:
    base        P
    action      D, E, B or U
    domainKey   "" = every domain: the proxy itself
    ttlMs       (B)
    now         epoch ms; "" = Redis TIME

  Keys built in the script: `P p:<id>`, `P idx:t:<tier>`, `P idx:l:<k>=<v>`, `P r:<dk>:<id>`
  pair, `P b:<dk>` busy index.

  Output: one integer per id, in order: 1 changed, 0 already so, -1 not found.

  Error codes: none.
]]
-- @include "base"
-- @include "proxy"
-- @include "pair"

local indexKey = KEYS[{{proxyActionKeys.index}}]
local quarantineKey = KEYS[{{proxyActionKeys.quarantine}}]
local metaKey = KEYS[{{proxyActionKeys.meta}}]

local base = ARGV[{{proxyAction.base}}]
local action = ARGV[{{proxyAction.action}}]
local dk = ARGV[{{proxyAction.domainKey}}]
local ttl = tonumber(ARGV[{{proxyAction.ttlMs}}]) or 0
local now = storeNow(ARGV[{{proxyAction.now}}])
local out = {}
local quarantineChanged = false

-- The pair (id, dk) banned until `untilMs` (0: the ban lifted); its busy entry follows.
local function banPair(id, untilMs)
  local pk = base .. 'r:' .. dk .. ':' .. id
  local pr = redis.call('HMGET', pk, 'h', 'n', 'b', 'c', 'm', 'g', 'x')
  local _, count, first = scanHolders(pr[1], now, nil)
  local old = tonumber(pr[3]) or 0
  if untilMs == 0 and old <= now then return 0 end
  local u = math.max(tonumber(pr[2]) or 0, untilMs, tonumber(pr[4]) or 0)
  local set = {'b', untilMs, 'u', u}
  local gcUntil = pairGc(set, pr[7], math.max(now, u))
  redis.call('HSET', pk, unpack(set))
  if gcUntil then redis.call('PEXPIRE', pk, gcUntil - now) end
  setBusy(base .. 'b:' .. dk, id, u, count, pr[5], first, gapOf(pr[6]), now)
  return 1
end

for i = {{argc.proxyAction}} + 1, #ARGV do
  local id = ARGV[i]
  local key = base .. 'p:' .. id
  local v = redis.call('HMGET', key, 'st', 't', 'l', 's', 'qu')
  local st, score = v[1], tonumber(v[4]) or 0
  local r = 0
  if not st then
    r = -1
  elseif action == 'D' then
    if st ~= 'D' then
      if st == 'A' then indexRem(base, indexKey, v[2], v[3], id) end
      if st == 'Q' then
        redis.call('ZREM', quarantineKey, id)
        quarantineChanged = true
      end
      redis.call('HSET', key, 'st', 'D', 'qu', 0)
      r = 1
    end
  elseif action == 'E' then
    if st == 'D' then
      redis.call('HSET', key, 'st', 'A')
      indexAdd(base, indexKey, v[2], v[3], score, id)
      r = 1
    end
  elseif dk ~= '' then
    r = banPair(id, action == 'B' and now + ttl or 0)
  elseif action == 'B' then
    if st == 'A' or st == 'Q' then
      if st == 'A' then indexRem(base, indexKey, v[2], v[3], id) end
      -- never shortens a quarantine that runs longer
      local untilMs = math.max(now + ttl, st == 'Q' and (tonumber(v[5]) or 0) or 0)
      redis.call('HSET', key, 'st', 'Q', 'qu', untilMs)
      redis.call('ZADD', quarantineKey, untilMs, id)
      quarantineChanged = true
      r = 1
    end
  elseif st == 'Q' then
    redis.call('HSET', key, 'st', 'A', 'qu', 0)
    redis.call('ZREM', quarantineKey, id)
    indexAdd(base, indexKey, v[2], v[3], score, id)
    quarantineChanged = true
    r = 1
  end
  out[#out + 1] = r
end
if quarantineChanged then quarantineNext(metaKey, quarantineKey) end
return out
