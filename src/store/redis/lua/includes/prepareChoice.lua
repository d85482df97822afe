-- Step prepareChoice (docs/store-semantics.md §acquire): what choosing a proxy reads. Answers the
-- wanted labels A[lf..le] as needles "\nk=v\n" (nil = none); the shadow domain-keys (nil = none);
-- the isolation groups whose holds the candidates are checked against and the keys that joined
-- the group lately, whose live leases are (G8; nil = none); the domain-key's interval now (before
-- jitter: the policy's, raised by adaptive pacing); the request's maxConcurrency as a number; the
-- live entries of the busy index; the exit rules of G9 (includes/exits.lua: nil = none in the pool,
-- else the request's grantUnknownExits) and how many proxies have siblings (0 without rules).
local function prepareChoice(A, lf, le, base, dk, busy, nowText, shadowKeys, group, formerGroups, joinedKeys,
                             adaptive, minIntervalMs, maxConcurrency, meta, grantUnknownExits)
  local needles = nil
  if lf <= le then
    needles = {}
    for i = lf, le do needles[#needles + 1] = A[i] end
  end
  local shadows = nil
  if shadowKeys ~= '' then
    shadows = {}
    for sdk in string.gmatch(shadowKeys, '[^\n]+') do shadows[#shadows + 1] = sdk end
  end
  local iso = nil
  if group ~= '' or formerGroups ~= '' or joinedKeys ~= '' then
    iso = {groups = {}, joined = {}}
    if group ~= '' then iso.groups[1] = group end
    for g in string.gmatch(formerGroups, '[^\n]+') do iso.groups[#iso.groups + 1] = g end
    for k in string.gmatch(joinedKeys, '[^\n]+') do iso.joined[#iso.joined + 1] = k end
  end
  local adapt = 0
  if adaptive == '1' then adapt = tonumber(redis.call('HGET', base .. 'd:' .. dk, 'a')) or 0 end
  local cur = tonumber(minIntervalMs)
  if adapt > cur then cur = adapt end
  local busyN = redis.call('ZCOUNT', busy, '(' .. nowText, '+inf')
  -- G9: no rules until exits matter in the pool (meta xs), then the request's grantUnknownExits
  -- (and the proxies a sibling may hold back, which the busy index does not show)
  local ex, sibN = nil, 0
  if meta[7] == '1' then ex, sibN = grantUnknownExits, tonumber(meta[8]) or 0 end
  return needles, shadows, iso, cur, tonumber(maxConcurrency), busyN, ex, sibN
end
