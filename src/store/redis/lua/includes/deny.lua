-- Step deny (docs/store-semantics.md §acquire): no candidate can be granted: {-5, retryAfterMs},
-- when an eligible proxy is known to appear. With no candidates at all (`n`), the earliest
-- quarantine return (busy entries then belong to proxies out of the list); otherwise the earliest
-- busy entry of the domain-key; or `freeAt` (a candidate held back by what the busy index does not
-- show, 0 = none) when sooner; -1 when none is known.
local function deny(quarantineKey, busy, now, nowText, n, freeAt)
  local e
  if n == 0 then
    e = redis.call('ZRANGE', quarantineKey, 0, 0, 'WITHSCORES')
  else
    e = redis.call('ZRANGEBYSCORE', busy, '(' .. nowText, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  end
  local known = -1
  if #e > 0 then known = math.max(0, tonumber(e[2]) - now) end
  if freeAt > 0 and (known < 0 or freeAt - now < known) then known = freeAt - now end
  return {-5, known}
end
