-- The band is at least this wide (and then 2 more per busy pair of the domain-key).
local BAND_MIN = 16
-- Random probes into the band before the scan.
local PROBES = 8
-- The scan after the probes reads the band in windows of this many entries, at most
-- SCAN_WINDOWS of them: a band of up to SCAN_WINDOW * SCAN_WINDOWS entries is read whole.
local SCAN_WINDOW = 256
local SCAN_WINDOWS = 4

-- The candidate index of pickCandidate: the tier's (or the whole) index, or the smallest label
-- index of a labels request when it is smaller. Answers the key and its size when it was counted
-- (or nil).
local function candidateIndex(candidates, base, tier, needles)
  if not needles then return candidates, nil end
  local best, bestN = nil, nil
  if tier ~= '' then best, bestN = candidates, redis.call('ZCARD', candidates) end
  for i = 1, #needles do
    local key = labelIndex(base, needles[i])
    local n = redis.call('ZCARD', key)
    if not bestN or n < bestN then best, bestN = key, n end
  end
  return best, bestN
end

-- Step pickCandidate (docs/store-semantics.md §acquire): up to PROBES random positions of the top
-- band of the candidate index (`candidates`, or a label index), then a scan of the band. Answers
-- the first eligible candidate's id, pair key and pair fields; else nil, nil, nil, the size n of
-- the candidate index and the earliest moment a candidate held back by what the busy index does
-- not show (the domain-key's interval now, a shadow domain-key, an isolation group) frees up
-- (0 = none seen). `sibN`: proxies that have siblings (G9), by which the band widens.
local function pickCandidate(candidates, busy, base, dk, tier, worker, honors, now, nowText, busyN, mc, cur, needles, rsv,
                             shadows, iso, group, ex, sibN)
  local cand, n = candidateIndex(candidates, base, tier, needles)
  -- a proxy held in the isolation group is as busy for this key as one of its own
  local heldN = 0
  if group ~= '' then heldN = heldCount(base, group, nowText) end
  -- (G9: a proxy a sibling holds back is as busy for this key, and not in the busy index)
  local band = BAND_MIN + 2 * (busyN + heldN) + sibN
  if n then band = math.min(band, n) end
  local tried = nil
  local probes = 0
  local freeAt = 0
  while probes < PROBES and band > 0 do
    local r = math.random(band) - 1
    if tried and tried[r] then
      probes = probes + 1
    else
      local ids = redis.call('ZRANGE', cand, r, r)
      if #ids == 0 then
        -- past the end: learn the index size (only small pools get here) and draw again
        if n then break end
        n = redis.call('ZCARD', cand)
        if n == 0 then break end
        band = math.min(band, n)
      else
        probes = probes + 1
        local cpk, cpr = candidatePair(base, dk, tier, worker, honors, now, ids[1], mc, cur, needles, rsv, shadows, iso, group, ex)
        if cpk then return ids[1], cpk, cpr end
        if cpr > 0 and (freeAt == 0 or cpr < freeAt) then freeAt = cpr end
        tried = tried or {}
        tried[r] = true
      end
    end
  end
  if not n then n = redis.call('ZCARD', cand) end
  band = math.min(band, n)
  if band > 0 then
    -- the band from a random start, wrapping, in windows: one ZRANGE (two when it wraps) and
    -- one ZMSCORE against the busy index each; a band of up to SCAN_WINDOW * SCAN_WINDOWS
    -- entries is read whole
    local start = math.random(band) - 1
    local limit = math.min(band, SCAN_WINDOW * SCAN_WINDOWS)
    local offset = 0
    while offset < limit do
      local pos = (start + offset) % band
      local count = math.min(SCAN_WINDOW, limit - offset)
      local ids = redis.call('ZRANGE', cand, pos, math.min(pos + count, band) - 1)
      if #ids < count then
        local more = redis.call('ZRANGE', cand, 0, count - #ids - 1)
        for i = 1, #more do ids[#ids + 1] = more[i] end
      end
      local scores = redis.call('ZMSCORE', busy, unpack(ids))
      for j = 1, #ids do
        if not (tried and tried[(pos + j - 1) % band]) and not (scores[j] and tonumber(scores[j]) > now) then
          local cpk, cpr = candidatePair(base, dk, tier, worker, honors, now, ids[j], mc, cur, needles, rsv, shadows, iso, group, ex)
          if cpk then return ids[j], cpk, cpr end
          if cpr > 0 and (freeAt == 0 or cpr < freeAt) then freeAt = cpr end
        end
      end
      offset = offset + count
    end
  end
  return nil, nil, nil, n, freeAt
end
