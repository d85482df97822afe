--[[
  The pair (proxy, domain-key), hash `P r:<dk>:<id>`:
    f  last fencing token granted: max(previous + 1, grant time in µs), so tokens keep
       increasing even after the key was lost
    u  max(n, b, c): until when the pair is blocked regardless of its holders
    n  nextAt (pacing), b banUntil, c coolUntil, r consecutive rate limits
    m  maxConcurrency and bt banTtlMs of the last grant
    g  end gap of the last grant: its interval with the "release" anchor, -1 with "grant" (absent
       = 0, release); a lease of the pair that ends (released, found expired) pushes n to its end
       + g, and a pair at its cap stays blocked until the earliest holder's expiry + g
    e  what pacing is measured from: the last grant, and with the "release" anchor the last end
       too; a grant needs e + the domain-key's interval *now* <= now, so a raised interval
       (adaptive pacing) holds at once for every pair
    p  what the last grant knew of pacing, for adaptive pacing: "<base>:<min>:<max>:<adaptive>"
       (interval before jitter, the policy's interval, the cap, 1|0); absent = never granted
    h  holders, the live lease records: "<hex>=<expireAt>=<token>=<ttlMs>;" each
    x  GC deadline: the key's TTL reaches a week past the last moment the pair remembers, and is
       refreshed (one PEXPIRE) only when that is less than a day away
    ig the isolation group and window of the last grant, "<group>\t<ms>" (absent or "" = none):
       its leases' renewals and releases update their hold in that group (includes/isolation.lua)
    t  the last RELEASED_KEEP leases released while live: "<hex>=<token>;" each, oldest first,
       so that a retried release answers "released" again (no key per lease: a fleet releasing
       thousands of leases a second would otherwise keep millions of tombstones)
  A lease that ended otherwise leaves a tombstone `P l:<hex>` = "<state>:<token>:<ttlMs>:<dk>\31<id>",
  state 0 expired (outcome not applied), 2 released after expiry, kept max(ttl, tombstone
  minimum).
  Needs the include base; the tombstone minimum is baked in (includes/config.lua).
  The busy index `P b:<dk>` holds proxy id → blockedUntil = max(u, capUntil + g) while > now,
  where capUntil = the earliest live holder expiry when live holders >= m.
]]

-- One pass over a holders string `h`: the live entries other than `hex` (their raw text,
-- count and earliest expiry), the expired ones other than `hex` (a list of raw entries, or
-- nil), the raw entry of `hex` itself (or nil), whatever its expiry, and the latest expiry
-- among the expired ones (0 when none).
local function scanHolders(h, now, hex)
  if not h or h == '' then return '', 0, 0, nil, nil, 0 end
  if string.find(h, ';', 1, true) == #h then
    -- one entry, the common case: no list, no concatenation
    local x, e = string.match(h, '^(%x+)=(%d+)=%d+=%d+;$')
    if x == hex then return '', 0, 0, nil, h, 0 end
    e = tonumber(e)
    if e > now then return h, 1, e, nil, nil, 0 end
    return '', 0, 0, {h}, nil, e
  end
  local kept, n, first, gone, mine, goneMax = {}, 0, 0, nil, nil, 0
  for raw, x, e in string.gmatch(h, '((%x+)=(%d+)=%d+=%d+;)') do
    if x == hex then
      mine = raw
    else
      e = tonumber(e)
      if e > now then
        n = n + 1
        kept[n] = raw
        if first == 0 or e < first then first = e end
      else
        gone = gone or {}
        gone[#gone + 1] = raw
        if e > goneMax then goneMax = e end
      end
    end
  end
  return table.concat(kept), n, first, gone, mine, goneMax
end

-- The end gap (>= 0) of a pair's field g, and whether ends anchor its pacing ("release").
local function gapOf(g)
  local v = tonumber(g) or 0
  if v < 0 then return 0, false end
  return v, true
end

-- nextAt after leases of the pair ended, the last at `endedAt` (0 = none), under end gap `g`.
local function anchoredNext(n, endedAt, g)
  if endedAt > 0 and g > 0 and endedAt + g > n then return endedAt + g end
  return n
end

-- Until when a proxy is busy under an earlier domain-key `sdk` of the host (0 = idle there):
-- its busy entry, or its pair (blocked, a live holder, a holder that ended within the gap).
local function shadowUntil(base, sdk, id, now)
  local s = redis.call('ZSCORE', base .. 'b:' .. sdk, id)
  if s and tonumber(s) > now then return tonumber(s) end
  local sp = redis.call('HMGET', base .. 'r:' .. sdk .. ':' .. id, 'u', 'h', 'g')
  local at = tonumber(sp[1]) or 0
  if sp[2] and sp[2] ~= '' then
    local g = gapOf(sp[3])
    local _, count, first, _, _, goneMax = scanHolders(sp[2], now, nil)
    if count > 0 and first + g > at then at = first + g end
    if goneMax > 0 and goneMax + g > at then at = goneMax + g end
  end
  if at > now then return at end
  return 0
end

-- Until when proxy `id` is busy under one of the shadow domain-keys (0 = idle under all).
local function shadowsUntil(base, now, id, shadows)
  if not shadows then return 0 end
  local at = 0
  for i = 1, #shadows do
    local s = shadowUntil(base, shadows[i], id, now)
    if s > at then at = s end
  end
  return at
end

-- Write a tombstone for lease `hex` of the pair (dk, id) that ended (token, ttl: their text).
local function tombstone(base, dk, id, hex, token, ttl, state)
  local px = '{{tombstoneMinMs}}'
  if tonumber(ttl) > {{tombstoneMinMs}} then px = ttl end
  local record = state .. ':' .. token .. ':' .. ttl .. ':' .. dk .. '\31' .. id
  redis.call('SET', base .. 'l:' .. hex, record, 'PX', px)
end

local RELEASED_KEEP = 4

-- The pair's field t (`t`: as read, nil when absent) with lease `hex` (token text `token`)
-- appended as released, the oldest dropped beyond RELEASED_KEEP.
local function rememberReleased(t, hex, token)
  local entry = hex .. '=' .. token .. ';'
  if not t or t == '' then return entry end
  local n, at = 0, 0
  while true do
    at = string.find(t, ';', at + 1, true)
    if not at then break end
    n = n + 1
  end
  if n >= RELEASED_KEEP then t = string.sub(t, string.find(t, ';', 1, true) + 1) end
  return t .. entry
end

-- The token text lease `hex` was released with, if it is among the pair's field t, else nil.
local function releasedToken(t, hex)
  if not t then return nil end
  local at = string.find(t, hex .. '=', 1, true)
  if not at then return nil end
  return string.match(t, '^(%d+);', at + #hex + 1)
end

-- Tombstones (state 0) for expired holder entries.
local function tombstoneGone(base, dk, id, gone)
  for i = 1, #gone do
    local hex, token, ttl = string.match(gone[i], '^(%x+)=%d+=(%d+)=(%d+);$')
    tombstone(base, dk, id, hex, token, ttl, '0')
  end
end

-- Mirror the pair's blockedUntil into the busy index: `u` (its field u, as the caller leaves it),
-- or, while its `count` live holders fill its cap `cap` (its field m as read, absent = 1), the
-- earliest holder expiry `first` plus the end gap `gap` when that is later. A busy key made or
-- kept for a long block gets a GC TTL of a day past blockedUntil.
local function setBusy(busyKey, id, u, count, cap, first, gap, now)
  local bu = u
  if count > 0 and count >= (tonumber(cap) or 1) and first + gap > bu then bu = first + gap end
  if bu > now then
    local added = redis.call('ZADD', busyKey, bu, id)
    if added == 1 or bu - now > DAY_MS / 2 then redis.call('PEXPIRE', busyKey, bu - now + DAY_MS) end
  else
    redis.call('ZREM', busyKey, id)
  end
end

-- The pair's GC deadline when it is due for a refresh: the pair remembers something until
-- `last`, its deadline field x was `x`. Answers the new deadline (to write as x, then PEXPIRE
-- the key to it), or nil.
local function pairGcDue(x, last)
  if last + DAY_MS <= (tonumber(x) or 0) then return nil end
  return last + WEEK_MS
end

-- Append the GC deadline to the HSET arguments `set` when it is due; answers the PEXPIRE
-- length to apply after the HSET, or nil.
local function pairGc(set, x, last)
  local due = pairGcDue(x, last)
  if not due then return nil end
  set[#set + 1] = 'x'
  set[#set + 1] = due
  return due
end
