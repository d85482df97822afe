--[[
  What a pool remembers of its recent leases (docs/store-semantics.md §longest TTL, §domain uses):
  in `P m`, lt (the longest lease TTL granted or renewed lately, ms) and lta (when a lease of that
  TTL last was), what a hold after a loss of state waits for; and `P wd` (hash
  "<worker>\n<dk>" → "<first use>:<last use>", epoch ms), the domain-keys workers leased lately,
  which fallback shares follow. The in-memory engine keeps the same records by the same rules
  (sdk/src/engine/memory/lately.ts). Needs nothing.
]]

-- A record of lt is refreshed at most this often by leases of that very TTL, and counts this much
-- longer than its TTL.
local LONGEST_TTL_REFRESH_MS = 1000

-- A lease of `ttl` ms was granted or renewed at `now`; `lt` and `lta` as read from `metaKey`.
local function noteTtl(metaKey, lt, lta, ttl, now)
  local l, a = tonumber(lt) or 0, tonumber(lta) or 0
  if ttl > l or now - a > l + LONGEST_TTL_REFRESH_MS then
    redis.call('HSET', metaKey, 'lt', ttl, 'lta', now)
  elseif ttl == l and now - a >= LONGEST_TTL_REFRESH_MS then
    redis.call('HSET', metaKey, 'lta', now)
  end
end

-- The longest TTL a lease may still be running with at `now` (0: none lately).
local function longestTtl(lt, lta, now)
  local l, a = tonumber(lt) or 0, tonumber(lta) or 0
  if now - a > l + LONGEST_TTL_REFRESH_MS then return 0 end
  return l
end

-- Record `worker`'s use of domain-key `dk` at `now`; a record unused for `window` ms starts over.
local function recordDomainUse(base, worker, dk, now, window)
  local key = base .. 'wd'
  local field = worker .. '\n' .. dk
  local first = now
  local was = redis.call('HGET', key, field)
  if was then
    local f, l = string.match(was, '^(%d+):(%d+)$')
    if f and tonumber(l) + window > now then first = tonumber(f) end
  end
  redis.call('HSET', key, field, string.format('%d:%d', first, now))
end
