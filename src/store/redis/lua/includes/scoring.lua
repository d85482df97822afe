--[[
  Scoring (SPEC §2), the Lua mirror of sdk/src/model/scoring.ts. Needs the include proxy; every
  number is baked in when the script is loaded (includes/config.lua). The script sets the pool
  keys it writes before any call: kIdx `P idx`, kQuarantine `P q`, kBlacklist `P bl`, kMeta `P m`.
]]
-- @include "events"
local kIdx, kQuarantine, kBlacklist, kMeta

-- quarantineLengthMs(n, u): base * 2^(n-1) capped, times (1 + jitter * (2u - 1)), rounded, capped.
local function quarantineLength(n, u)
  local raw = math.min({{quarantineMaxMs}}, {{quarantineBaseMs}} * 2 ^ math.max(0, n - 1))
  return math.min({{quarantineMaxMs}}, math.floor(raw * (1 + {{quarantineJitter}} * (2 * u - 1)) + 0.5))
end

-- Set the score of proxy `id` (state st, tier, labels, quarantine count qc (string), score old)
-- to `score` clamped, with its consequences: an ACTIVE proxy falling below the floor is
-- BLACKLISTED when it was already quarantined maxQuarantines times, else QUARANTINED for the
-- next length (jitter draw `u`, a string); otherwise an ACTIVE proxy moves in the indexes.
-- Appends HSET field/value pairs to `set`.
local function changeScore(base, id, st, tier, labels, qc, old, score, now, u, set)
  if score < {{minScore}} then score = {{minScore}} elseif score > {{maxScore}} then score = {{maxScore}} end
  if score ~= old then
    set[#set + 1] = 's'
    set[#set + 1] = score
  end
  if st ~= 'A' then return end
  if score >= {{floor}} then
    if score ~= old then indexAdd(base, kIdx, tier, labels, score, id) end
    return
  end
  indexRem(base, kIdx, tier, labels, id)
  qc = tonumber(qc) or 0
  if qc >= {{maxQuarantines}} then
    set[#set + 1] = 'st'
    set[#set + 1] = 'B'
    redis.call('SADD', kBlacklist, id)
    emitEvent(base, 'BLACKLIST', id, '', '')
  else
    qc = qc + 1
    local untilMs = now + quarantineLength(qc, tonumber(u))
    set[#set + 1] = 'st'
    set[#set + 1] = 'Q'
    set[#set + 1] = 'qc'
    set[#set + 1] = qc
    set[#set + 1] = 'qu'
    set[#set + 1] = untilMs
    redis.call('ZADD', kQuarantine, untilMs, id)
    quarantineNext(kMeta, kQuarantine)
    emitEvent(base, 'QUARANTINE', id, '', untilMs)
  end
end
