--[[
  Proxy records and the candidate indexes.
  Record `P p:<id>` fields: u url, t tier, l labels ("\n" then "k=v\n" per label, escaped by the
  caller), s score, st state (A ACTIVE, Q QUARANTINED, B BLACKLISTED, D DISABLED), lt latency
  EWMA, sc successes, fc failures, lb last used by, la last used at, qu quarantine until,
  qc quarantine count.
  Indexes: `P idx`, `P idx:t:<tier>` and `P idx:l:<k>=<v>` (one per label, escaped as in the
  record) hold ACTIVE ids with score −score, so that ZRANGE from 0 lists the best first and equal
  scores in id order.
]]
-- Put `id` into the whole index, its tier index and its label indexes at `score`.
local function indexAdd(base, idxKey, tier, labels, score, id)
  redis.call('ZADD', idxKey, -score, id)
  if tier and tier ~= '' then redis.call('ZADD', base .. 'idx:t:' .. tier, -score, id) end
  if labels and labels ~= '\n' and labels ~= '' then
    for kv in string.gmatch(labels, '[^\n]+') do redis.call('ZADD', base .. 'idx:l:' .. kv, -score, id) end
  end
end

-- Take `id` out of the whole index, its tier index and its label indexes.
local function indexRem(base, idxKey, tier, labels, id)
  redis.call('ZREM', idxKey, id)
  if tier and tier ~= '' then redis.call('ZREM', base .. 'idx:t:' .. tier, id) end
  if labels and labels ~= '\n' and labels ~= '' then
    for kv in string.gmatch(labels, '[^\n]+') do redis.call('ZREM', base .. 'idx:l:' .. kv, id) end
  end
end

-- After the quarantine zset changed: the meta field qn = its earliest return (absent when
-- empty). An acquire returns proxies only once qn is due, so it never reads an idle zset.
local function quarantineNext(metaKey, qKey)
  local e = redis.call('ZRANGE', qKey, 0, 0, 'WITHSCORES')
  if #e > 0 then
    redis.call('HSET', metaKey, 'qn', e[2])
  else
    redis.call('HDEL', metaKey, 'qn')
  end
end

-- The label index a wanted label (a needle "\nk=v\n") is found in.
local function labelIndex(base, needle)
  return base .. 'idx:l:' .. string.sub(needle, 2, -2)
end

-- Every wanted label (a needle "\nk=v\n") is among the record's labels `have`.
local function labelsMatch(have, needles)
  for i = 1, #needles do
    if not have or not string.find(have, needles[i], 1, true) then return false end
  end
  return true
end
