-- Step admitWorker (docs/store-semantics.md §acquire): the worker is seen (a worker that keeps a
-- fallback pool is recorded as such too; "-": recorded moments ago). Not before: an acquire
-- answered stale or held (after a loss of state) does not count as the worker being back, so a
-- silent worker's share stays reserved until its first real answer, which starts the hand-over
-- of its fallback leases. Then every proxy of the domain-key (or of its isolation group) reserved
-- for a silent worker that may use them from its fallback pool: refused ({-5, -1}) — or, to a
-- caller that keeps to its TTL (`honors`), granted only until that worker may use them
-- (`domainReservedUntil`) — and not recorded as a use of the domain-key (the caller must not
-- become established for it while that worker may be on it alone, docs/spec.md §7); otherwise
-- the worker's use of the domain-key is recorded (fallback shares follow them; "": recorded
-- moments ago), granted or not.
-- Answers the refusal (or nil) and the reservations key when the pool has any (else nil).
local function admitWorker(base, worker, honors, dk, group, workersKey, fallbackPool, yieldsLeases, domainUseMs, now, nowText)
  if fallbackPool ~= '-' then
    seeWorker(workersKey, base .. 'wf', worker, fallbackPool == '1', now, nowText)
    if yieldsLeases == '1' then seeYielding(base .. 'wy', worker, now, nowText) end
  end
  local rsv = base .. 'rsv'
  if redis.call('EXISTS', rsv) == 0 then rsv = nil end
  local reserved = domainReservedUntil(rsv, dk, group, worker, honors, now)
  if reserved == 0 then return {-5, -1}, rsv end
  if not reserved and domainUseMs ~= '' then recordDomainUse(base, worker, dk, now, tonumber(domainUseMs)) end
  return nil, rsv
end
