-- Step prepareChoice (docs/store-semantics.md §acquire): what choosing a proxy reads, resolved once
-- into q: q.needles the wanted labels as needles "\nk=v\n" (nil = none), q.shadows the shadow
-- domain-keys (nil = none), q.iso the isolation groups whose holds the candidates are checked
-- against and the keys that joined the group lately, whose live leases are (G8; nil = none),
-- q.cur the domain-key's interval now (before jitter: the policy's, raised by adaptive pacing),
-- q.mc the request's maxConcurrency, q.busyN the live entries of the busy index.
local function prepareChoice(q)
  if q.lf <= q.le then
    local needles, A = {}, q.A
    for i = q.lf, q.le do needles[#needles + 1] = A[i] end
    q.needles = needles
  end
  if q.shadowKeys ~= '' then
    local shadows = {}
    for sdk in string.gmatch(q.shadowKeys, '[^\n]+') do shadows[#shadows + 1] = sdk end
    q.shadows = shadows
  end
  local group = q.group
  if group ~= '' or q.formerGroups ~= '' or q.joinedKeys ~= '' then
    local iso = {groups = {}, joined = {}}
    if group ~= '' then iso.groups[1] = group end
    for g in string.gmatch(q.formerGroups, '[^\n]+') do iso.groups[#iso.groups + 1] = g end
    for k in string.gmatch(q.joinedKeys, '[^\n]+') do iso.joined[#iso.joined + 1] = k end
    q.iso = iso
  end
  local adapt = 0
  if q.adaptive == '1' then adapt = tonumber(redis.call('HGET', q.base .. 'd:' .. q.dk, 'a')) or 0 end
  local cur = tonumber(q.minIntervalMs)
  if adapt > cur then cur = adapt end
  q.cur = cur
  q.mc = tonumber(q.maxConcurrency)
  q.busyN = redis.call('ZCOUNT', q.busy, '(' .. q.nowText, '+inf')
end
