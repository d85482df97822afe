-- Step checkVersion (docs/store-semantics.md §acquire): the request's policy version against the
-- pool's (stale: {-4, version}); after a loss of state, nothing until leases from before can no
-- longer be in use ({-5, ms}). Keeps the pool meta it read in q.meta (pv qn ep es lt lta) for the
-- later steps. Answers the reply that ends the acquire, or nil.
local function checkVersion(q)
  local meta = redis.call('HMGET', q.metaKey, 'pv', 'qn', 'ep', 'es', 'lt', 'lta')
  q.meta = meta
  local pv = (meta[3] or '') .. '.' .. (meta[1] or '0')
  if pv ~= q.policyVersion then return {-4, pv} end
  if meta[4] and tonumber(meta[4]) > q.now then return {-5, tonumber(meta[4]) - q.now} end
  return nil
end
