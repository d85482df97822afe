-- A session binding's key outlives its binding by this much.
local SESSION_GC_MS = 600000

-- Step grant (docs/store-semantics.md §acquire): grant proxy `id` on its pair (key `pk`, fields
-- `pr`: u h f m bt x g p e ig; the step that picked it checked there is room) under maxConcurrency
-- `mc`; `cur` is the domain-key's interval now, before jitter; `busy` the domain-key's busy index
-- (`busyN` live entries), `binding` the session binding's key. The rest are the request's
-- arguments (list `acquire`), as text, and the pool meta as checkVersion read it; `rsv` the
-- reservations key (nil: none). The lease runs the TTL asked — on a pair reserved for a silent
-- worker from a later moment, until then (includes/reservations.lua `pairReservedUntil`; the
-- lease record keeps the TTL asked, what a renewal without one extends it by). Then notes the
-- lease's TTL (includes/lately.lua). Answers the grant reply.
local function grant(busy, binding, now, nowText, id, pk, pr, rebound, mc, busyN, cur,
                     base, dk, worker, honors, rsv, identity, hex, ttlText, mcText, minText, maxText, adaptive,
                     jitterText, anchor, banTtl, sessionKey, sessionTtl, requestId, group, affinity, metaKey, meta)
  local ttl = tonumber(ttlText)
  local reservedTo = pairReservedUntil(rsv, id, dk, group, worker, honors, now)
  if reservedTo and reservedTo - now < ttl then ttl = reservedTo - now end
  local exp = now + ttl
  local kept, count, first, gone = scanHolders(pr[2], now, nil)
  if gone then tombstoneGone(base, dk, id, gone) end
  -- G4: max(previous + 1, now in µs): increasing even after the store lost the pair's state
  local token = math.max((tonumber(pr[3]) or 0) + 1, NOW_US)
  -- each number formatted once (formatting one costs about as much as a redis.call)
  local tokenText, expText = string.format('%d', token), string.format('%d', exp)
  local holders = kept .. hex .. '=' .. expText .. '=' .. tokenText .. '=' .. ttlText .. ';'
  -- G2: the interval of this grant, and what an end of the lease adds to it
  local minInterval = tonumber(minText)
  local baseInterval = cur
  local interval = baseInterval
  local jitter = tonumber(jitterText)
  if jitter > 0 then interval = interval + math.random(0, jitter) end
  -- the g field: the gap after an end with the "release" anchor, -1 with "grant"
  local gField, gap = -1, 0
  if anchor == 'r' then gField, gap = interval, interval end
  -- (the policy's own text when the interval is the policy's: no number formatted)
  local pacing
  if baseInterval == minInterval then
    pacing = minText .. ':' .. minText .. ':' .. maxText .. ':' .. adaptive
  else
    pacing = baseInterval .. ':' .. minInterval .. ':' .. maxText .. ':' .. adaptive
  end
  local u = tonumber(pr[1]) or 0
  if interval > 0 then u = math.max(u, now + interval) end
  local gcUntil = pairGcDue(pr[6], math.max(now, u))
  local set = {'f', tokenText, 'h', holders, 'e', nowText}
  if interval > 0 then set[7], set[8], set[9], set[10] = 'n', now + interval, 'u', u end
  if pr[4] ~= mcText then
    set[#set + 1] = 'm'
    set[#set + 1] = mcText
  end
  if pr[5] ~= banTtl then
    set[#set + 1] = 'bt'
    set[#set + 1] = banTtl
  end
  if (tonumber(pr[7]) or 0) ~= gField then
    set[#set + 1] = 'g'
    set[#set + 1] = gField
  end
  if pr[8] ~= pacing then
    set[#set + 1] = 'p'
    set[#set + 1] = pacing
  end
  if gcUntil then
    set[#set + 1] = 'x'
    set[#set + 1] = gcUntil
  end
  -- G8: the group and window that the lease's renewals and release update the hold of
  local ig = isolationField(group, affinity) or ''
  if (pr[10] or '') ~= ig then
    set[#set + 1] = 'ig'
    set[#set + 1] = ig
  end
  redis.call('HSET', pk, unpack(set))
  if group ~= '' then holdInGroup(base, group, id, dk, exp + tonumber(affinity), now, true) end
  if gcUntil then redis.call('PEXPIRE', pk, gcUntil - now) end
  -- blockedUntil with the new holder and the request's maxConcurrency as the pair's cap
  local bu = u
  if count + 1 >= mc then
    if count == 0 or exp < first then first = exp end
    if first + gap > bu then bu = first + gap end
  end
  if bu > now then
    redis.call('ZADD', busy, bu == exp and expText or bu, id)
    -- a new busy key gets its GC TTL; a busy one is refreshed now and then
    if busyN == 0 or math.random(64) == 1 then redis.call('PEXPIRE', busy, bu - now + DAY_MS) end
  end
  local key = base .. 'p:' .. id
  local by = identity
  if by == '' then by = worker end
  redis.call('HSET', key, 'lb', by, 'la', nowText)
  if sessionKey ~= '' then
    local sttl = tonumber(sessionTtl)
    redis.call('SET', binding, (now + sttl) .. ':' .. id, 'PX', sttl + SESSION_GC_MS)
  end
  if requestId ~= '' then
    -- the grant time as text (a number formatted costs about as much as a redis.call)
    local record = hex .. ' ' .. id .. ' ' .. tokenText .. ' ' .. nowText
    redis.call('SET', base .. 'rq:' .. worker .. ' ' .. requestId, record, 'PX', REQUEST_MEMORY_MS)
  end
  local v = redis.call('HMGET', key, 'u', 't', 'l', 's', 'st', 'lt', 'sc', 'fc', 'qu', 'qc', 'xi')
  -- the interval reported (kept leases: 0 = the pair is not paced): a fraction of a ms, or a
  -- jitter that drew 0, is still pacing
  local reportedInterval = math.ceil(interval)
  if jitter > 0 and reportedInterval < 1 then reportedInterval = 1 end
  noteTtl(metaKey, meta[5], meta[6], ttl, now)
  return {1, token, exp, rebound, id, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], by, now, v[9], v[10], v[11], hex,
          reportedInterval, ttl}
end
