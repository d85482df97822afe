-- Step replayRequest (docs/store-semantics.md §acquire): a retried request whose lease is still
-- held gets that lease again: its grant reply, or nil (a request without id, or none held).
local function replayRequest(base, dk, worker, requestId, now)
  if requestId == '' then return nil end
  local prev = redis.call('GET', base .. 'rq:' .. worker .. ' ' .. requestId)
  if not prev then return nil end
  local hex, id, token, grantedAt = string.match(prev, '^(%x+) (.+) (%d+) (%d+)$')
  if not hex or now - tonumber(grantedAt) >= REQUEST_MEMORY_MS then return nil end
  local pr = redis.call('HMGET', base .. 'r:' .. dk .. ':' .. id, 'h')
  local _, _, _, _, mine = scanHolders(pr[1], now, hex)
  if not mine then return nil end
  local e, t = string.match(mine, '^%x+=(%d+)=(%d+)=%d+;$')
  if t ~= token or tonumber(e) <= now then return nil end
  local v = redis.call('HMGET', base .. 'p:' .. id, 'u', 't', 'l', 's', 'st', 'lt', 'sc', 'fc', 'lb', 'la', 'qu', 'qc', 'xi')
  if not v[1] then return nil end
  return {1, tonumber(token), tonumber(e), 0, id, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], tonumber(v[10]), v[11], v[12], v[13], hex, -1, tonumber(e) - now}
end
