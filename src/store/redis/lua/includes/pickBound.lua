-- Step pickBound (docs/store-semantics.md §acquire): a request bound to one proxy, by the argument
-- `proxyId` (a fallback lease handed back) or by its session's live binding (key `binding`).
-- Answers that proxy's id, pair key and pair fields when it can be granted now; nil, nil, nil and
-- the denial reply when the request must wait for it; else nil, nil, nil, nil and `rebound`: 1
-- when the session's proxy cannot serve the request at all (the grant then rebinds the session),
-- 0 when the request is bound to none.
local function pickBound(base, dk, tier, worker, honors, now, binding, proxyId, sessionKey, needles, mc, cur, shadows, rsv, iso, group, ex)
  local b
  if proxyId ~= '' then
    b = proxyId
  elseif sessionKey ~= '' then
    local s = redis.call('GET', binding)
    local sexp
    if s then sexp, b = string.match(s, '^(%d+):(.*)$') end
    if not (sexp and tonumber(sexp) > now) then return nil, nil, nil, nil, 0 end
  else
    return nil, nil, nil, nil, 0
  end
  local pk, pr = boundPair(base, dk, tier, worker, honors, now, b, needles, mc, cur, shadows, rsv, iso, group, ex)
  if pk then return b, pk, pr end
  if proxyId ~= '' then return nil, nil, nil, {-5, pr or -1} end
  if pr then return nil, nil, nil, {-5, pr} end
  return nil, nil, nil, nil, 1
end
