--[[
  recordHealth: apply one health check result to a proxy (SPEC §2: pass +healthPass, fail
  +healthFail, error × healthErrorFactor, clamped). A pass on a QUARANTINED proxy returns it to
  ACTIVE with max(score, scoreAfterQuarantine); an ACTIVE proxy falling below the floor is
  quarantined or blacklisted as after an outcome.

  KEYS[1] `P p:<id>`   proxy record
  KEYS[2] `P idx`      ACTIVE index
  KEYS[3] `P q`        quarantine zset
  KEYS[4] `P bl`       blacklist set
  KEYS[5] `P m`        pool meta hash (qn: earliest quarantine return)
  where P = "<prefix>:{<pool>}:".

  ARGV[1] P
  ARGV[2] now (epoch ms; "" = Redis TIME)
  ARGV[3] proxy id
  ARGV[4] result: p pass, f fail, e error
  ARGV[5] u, the quarantine jitter draw (uniform in [0, 1))
  ARGV[6] term of the checker's leader lease ("" = none): a result of a lower term than one
          recorded already in the pool (meta field ht) is refused, a higher one is recorded
  The numbers of SPEC §2 (healthPass, healthFail, healthErrorFactor, scoreAfterQuarantine, the
  score bounds and quarantine lengths) are baked into the script (includes/config.lua).

  Keys built in the script: `P evs` (the event stream, includes/events.lua), `P idx:t:<tier>`, `P idx:l:<k>=<v>`.

  Output: {-6} unknown proxy; else {1, url, tier, labels, score, state, latencyEwma, successes,
  failures, lastUsedBy, lastUsedAt, quarantineUntil, quarantineCount}.

  Error codes (ScriptCode): -6 ProxyNotFound, -7 StaleTerm (a newer leader checks now).
]]
-- @include "base"
-- @include "proxy"
-- @include "scoring"

kIdx, kQuarantine, kBlacklist, kMeta = KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now = storeNow(ARGV[2])
if ARGV[6] ~= '' then
  local t = tonumber(ARGV[6])
  local ht = tonumber(redis.call('HGET', KEYS[5], 'ht')) or 0
  if t < ht then return {-7} end
  if t > ht then redis.call('HSET', KEYS[5], 'ht', ARGV[6]) end
end
local v = redis.call('HMGET', KEYS[1], 's', 'st', 't', 'qc', 'l')
if not v[1] then return {-6} end
local old = tonumber(v[1])
local result = ARGV[4]
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
  redis.call('HSET', KEYS[1], 's', score, 'st', 'A', 'qu', 0)
  redis.call('ZREM', KEYS[3], ARGV[3])
  quarantineNext(KEYS[5], KEYS[3])
  indexAdd(ARGV[1], KEYS[2], v[3], v[5], score, ARGV[3])
else
  local set = {}
  changeScore(ARGV[1], ARGV[3], v[2], v[3], v[5], v[4], old, score, now, ARGV[5], set)
  if #set > 0 then redis.call('HSET', KEYS[1], unpack(set)) end
end
local r = redis.call('HMGET', KEYS[1], 'u', 't', 'l', 's', 'st', 'lt', 'sc', 'fc', 'lb', 'la', 'qu', 'qc')
table.insert(r, 1, 1)
return r
