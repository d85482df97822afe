-- Step checkVersion (docs/store-semantics.md §acquire): the request's policy version against the
-- pool's (stale: {-4, version}); after a loss of state, nothing until leases from before can no
-- longer be in use ({-5, ms}). Answers the reply that ends the acquire (or nil) and the pool meta
-- it read (pv qn ep es lt lta xs xn), which later steps use.
local function checkVersion(metaKey, policyVersion, now)
  local meta = redis.call('HMGET', metaKey, 'pv', 'qn', 'ep', 'es', 'lt', 'lta', 'xs', 'xn')
  local pv = (meta[3] or '') .. '.' .. (meta[1] or '0')
  if pv ~= policyVersion then return {-4, pv}, meta end
  if meta[4] and tonumber(meta[4]) > now then return {-5, tonumber(meta[4]) - now}, meta end
  return nil, meta
end
