--[[
  recordHealth: apply one health check result to a proxy (SPEC §2: pass +healthPass, fail
  +healthFail, error × healthErrorFactor, clamped). A pass on a QUARANTINED proxy returns it to
  ACTIVE with max(score, scoreAfterQuarantine); an ACTIVE proxy falling below the floor is
  quarantined or blacklisted as after an outcome.

  KEYS: list `recordHealthKeys` (the order: src/store/redis/script-keys.ts):
    proxy       `P p:<id>`   proxy record
    index       `P idx`      ACTIVE index
    quarantine  `P q`        quarantine zset
    blacklist   `P bl`       blacklist set
    meta        `P m`        pool meta hash (qn: earliest quarantine return)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `recordHealth` (the order: src/store/redis/script-args.ts):
    base      P
    now       epoch ms; "" = Redis TIME
    proxyId
    result    p pass, f fail, e error
    u         the quarantine jitter draw (uniform in [0, 1))
    exitIp    the exit IP the answer showed ("" = none; G9, includes/exitRecord.lua)
    term      term of the checker's leader lease ("" = none): a result of a lower term than one
              recorded already in the pool (meta field ht) is refused, a higher one is recorded
  The numbers of SPEC §2 (healthPass, healthFail, healthErrorFactor, scoreAfterQuarantine, the
  score bounds and quarantine lengths) are baked into the script (includes/config.lua).

  Keys built in the script: `P evs` (the event stream, includes/events.lua), `P idx:t:<tier>`, `P idx:l:<k>=<v>`.

  Output: {-6} unknown proxy; else {1, url, tier, labels, score, state, latencyEwma, successes,
  failures, lastUsedBy, lastUsedAt, quarantineUntil, quarantineCount, exitIp, exitBefore}: exitBefore the
  exit before when this check changed it ("none" when there was none), else "".

  Error codes (ScriptCode): -6 ProxyNotFound, -7 StaleTerm (a newer leader checks now).
]]
-- @include "base"
-- @include "proxy"
-- @include "scoring"
-- @include "exitRecord"

local proxyKey = KEYS[{{recordHealthKeys.proxy}}]
local indexKey = KEYS[{{recordHealthKeys.index}}]
local quarantineKey = KEYS[{{recordHealthKeys.quarantine}}]
local blacklistKey = KEYS[{{recordHealthKeys.blacklist}}]
local metaKey = KEYS[{{recordHealthKeys.meta}}]

kIdx, kQuarantine, kBlacklist, kMeta = indexKey, quarantineKey, blacklistKey, metaKey
local base = ARGV[{{recordHealth.base}}]
local now = storeNow(ARGV[{{recordHealth.now}}])
local id = ARGV[{{recordHealth.proxyId}}]
local result = ARGV[{{recordHealth.result}}]
local u = ARGV[{{recordHealth.u}}]
local term = ARGV[{{recordHealth.term}}]
local exitIp = ARGV[{{recordHealth.exitIp}}]

if term ~= '' then
  local t = tonumber(term)
  local ht = tonumber(redis.call('HGET', metaKey, 'ht')) or 0
  if t < ht then return {-7} end
  if t > ht then redis.call('HSET', metaKey, 'ht', term) end
end
local v = redis.call('HMGET', proxyKey, 's', 'st', 't', 'qc', 'l')
if not v[1] then return {-6} end
local old = tonumber(v[1])
local score
if result == 'p' then
  score = old + {{healthPass}}
elseif result == 'f' then
  score = old + {{healthFail}}
else
  score = old * {{healthErrorFactor}}
end
if score < {{minScore}} then score = {{minScore}} elseif score > {{maxScore}} then score = {{maxScore}} end
if result == 'p' and v[2] == 'Q' then
  score = math.max(score, {{scoreAfterQuarantine}})
  redis.call('HSET', proxyKey, 's', score, 'st', 'A', 'qu', 0)
  redis.call('ZREM', quarantineKey, id)
  quarantineNext(metaKey, quarantineKey)
  indexAdd(base, indexKey, v[3], v[5], score, id)
else
  local set = {}
  changeScore(base, id, v[2], v[3], v[5], v[4], old, score, now, u, set)
  if #set > 0 then redis.call('HSET', proxyKey, unpack(set)) end
end
-- G9: an answer through the proxy is its first probe; the exit it showed (includes/exitRecord.lua)
if result ~= 'e' then redis.call('HSET', proxyKey, 'xp', 1) end
local exitBefore = recordExit(base, metaKey, proxyKey, id, exitIp, now)
local r = redis.call('HMGET', proxyKey, 'u', 't', 'l', 's', 'st', 'lt', 'sc', 'fc', 'lb', 'la', 'qu', 'qc', 'xi')
table.insert(r, 1, 1)
r[#r + 1] = exitBefore or ''
return r
