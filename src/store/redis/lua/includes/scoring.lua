--[[
  Scoring (SPEC §2), the Lua mirror of sdk/core/scoring.ts. Every number comes from the
  caller's ScoringConfig through ARGV: A[i .. i+7] = minScore, maxScore, floor, maxQuarantines,
  quarantineBaseMs, quarantineMaxMs, quarantineJitter, u (the jitter draw, uniform in [0, 1));
  the quarantine numbers are read only when a quarantine starts.
  Keys (K[5..8] of the release step, passed as `K`): `P idx`, `P q`, `P bl`, `P m`.
]]

-- quarantineLengthMs(n, u): base * 2^(n-1) capped, times (1 + jitter * (2u - 1)), rounded, capped.
local function quarantineLength(A, i, n)
  local qMax, qBase, jitter, u = tonumber(A[i + 5]), tonumber(A[i + 4]), tonumber(A[i + 6]), tonumber(A[i + 7])
  local raw = math.min(qMax, qBase * 2 ^ math.max(0, n - 1))
  return math.min(qMax, math.floor(raw * (1 + jitter * (2 * u - 1)) + 0.5))
end

-- Set the score of proxy `id` (state st, tier, quarantine count qc (string), score old) to
-- `score` clamped, with its consequences: an ACTIVE proxy falling below the floor is BLACKLISTED
-- when it was already quarantined maxQuarantines times, else QUARANTINED for the next length;
-- otherwise an ACTIVE proxy moves in the index. Appends HSET field/value pairs to `set`.
local function changeScore(A, i, K, id, st, tier, qc, old, score, now, set)
  local lo, hi = tonumber(A[i]), tonumber(A[i + 1])
  if score < lo then score = lo elseif score > hi then score = hi end
  if score ~= old then
    set[#set + 1] = 's'
    set[#set + 1] = score
  end
  if st ~= 'A' then return end
  local base = A[1]
  if score >= tonumber(A[i + 2]) then
    if score ~= old then indexAdd(base, K[5], tier, score, id) end
    return
  end
  indexRem(base, K[5], tier, id)
  qc = tonumber(qc) or 0
  if qc >= tonumber(A[i + 3]) then
    set[#set + 1] = 'st'
    set[#set + 1] = 'B'
    redis.call('SADD', K[7], id)
  else
    qc = qc + 1
    local untilMs = now + quarantineLength(A, i, qc)
    set[#set + 1] = 'st'
    set[#set + 1] = 'Q'
    set[#set + 1] = 'qc'
    set[#set + 1] = qc
    set[#set + 1] = 'qu'
    set[#set + 1] = untilMs
    redis.call('ZADD', K[6], untilMs, id)
    quarantineNext(K[8], K[6])
  end
end
