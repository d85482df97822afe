-- Step pickBound (docs/store-semantics.md §acquire): a request bound to one proxy, by the argument
-- proxyId (a fallback lease handed back) or by its session's live binding. Answers that proxy's
-- id, pair key and pair fields when it can be granted now; nil, nil, nil and the denial reply
-- when the request must wait for it; nil when the request is bound to none, or its session's
-- proxy cannot serve it at all (then q.rebound = 1: the grant rebinds the session).
local function pickBound(q)
  local b
  if q.proxyId ~= '' then
    b = q.proxyId
  elseif q.sessionKey ~= '' then
    local s = redis.call('GET', q.binding)
    local sexp
    if s then sexp, b = string.match(s, '^(%d+):(.*)$') end
    if not (sexp and tonumber(sexp) > q.now) then return nil end
  else
    return nil
  end
  local pk, pr = boundPair(q.base, q.dk, q.tier, q.worker, q.now, b, q.needles, q.mc, q.cur, q.shadows, q.rsv, q.iso, q.group)
  if pk then return b, pk, pr end
  if q.proxyId ~= '' then return nil, nil, nil, {-5, pr or -1} end
  if pr then return nil, nil, nil, {-5, pr} end
  q.rebound = 1
  return nil
end
