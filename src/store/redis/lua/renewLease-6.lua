--[[
  renewLease: extend a held lease to now + ttl (docs/store-semantics.md §renew; G3). The lease
  is a holder entry of its pair; a lease that ended is found by its tombstone.

  KEYS: list `renewKeys` (the order: src/store/redis/script-keys.ts):
    lease     `P l:<hex>`       tombstone "<state>:<token>:<ttlMs>:<dk>\31<id>" of an ended lease
    pair      `P r:<dk>:<id>`   pair of the lease (its field h holds the live leases)
    busy      `P b:<dk>`        busy index of the domain-key
    workers   `P ws`            zset: worker id → last seen (the renewing worker is seen)
    reserved  `P rsv`           hash: the reservations of silent workers (includes/reservations.lua)
    meta      `P m`             pool meta: lt and lta, the longest TTL lately (includes/lately.lua)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `renew` (the order: src/store/redis/script-args.ts):
    base        P
    hex         the lease's
    domainKey
    proxyId
    token       fencing token
    ttlMs       0 = the lease's own ttl
    now         epoch ms; "" = Redis TIME
    workerId    "" = unknown
    liveSince   epoch ms: the worker is recorded as seen only if it was seen since then
    isolationGroup  the domain-key's isolation group now ("" none, "-" unknown: the pair's field
                ig, the group of its last grant); affinityMs its window
    honorsTtl   1 = the caller keeps to the TTL the answer gives, 0 = not
  The tombstone minimum is baked into the script (includes/config.lua).

  Keys built in the script: `P l:<hex>` tombstones of holders found expired; the lease's hold in
  its isolation group, `P gh:<group>:<id>` and `P gb:<group>` (includes/isolation.lua).

  Output: {1, expireAt, ttl} renewed (ttl: the ms it runs from now — the TTL asked, or less when
  a reservation holds sooner); {-1} NOT_FOUND (unknown or released); {-2} REVOKED (a wrong
  token, or the proxy or its domain-key is reserved for another worker: not extended, it runs
  out at its expiry);
  {-3} EXPIRED (the holder leaves the pair, with a tombstone).

  Error codes (ScriptCode): -1 LeaseNotFound, -2 LeaseRevoked, -3 LeaseExpired.
]]
-- @include "base"
-- @include "pair"
-- @include "isolation"
-- @include "lately"
-- @include "reservations"

local leaseKey = KEYS[{{renewKeys.lease}}]
local pairKey = KEYS[{{renewKeys.pair}}]
local busyKey = KEYS[{{renewKeys.busy}}]
local workersKey = KEYS[{{renewKeys.workers}}]
local reservedKey = KEYS[{{renewKeys.reserved}}]
local metaKey = KEYS[{{renewKeys.meta}}]

local base = ARGV[{{renew.base}}]
local hex = ARGV[{{renew.hex}}]
local dk = ARGV[{{renew.domainKey}}]
local id = ARGV[{{renew.proxyId}}]
local fencing = ARGV[{{renew.token}}]
local ttlMs = ARGV[{{renew.ttlMs}}]
local now = storeNow(ARGV[{{renew.now}}])
local worker = ARGV[{{renew.workerId}}]
local liveSince = ARGV[{{renew.liveSince}}]
local groupNow = ARGV[{{renew.isolationGroup}}]
local affinityNow = ARGV[{{renew.affinityMs}}]
local honors = ARGV[{{renew.honorsTtl}}] == '1'

local pr = redis.call('HMGET', pairKey, 'h', 'u', 'm', 'x', 'g', 'n', 'e', 'ig')
local kept, count, first, gone, mine, goneMax = scanHolders(pr[1], now, hex)
if not mine then
  local rec = redis.call('GET', leaseKey)
  if not rec then return {-1} end
  local state, token, _, check = string.match(rec, '^(%d):(%d+):(%d+):(.*)$')
  if not state or state == '1' or check ~= dk .. '\31' .. id then return {-1} end
  if token ~= fencing then return {-2} end
  return {-3}
end
local e, token, ttl = string.match(mine, '^%x+=(%d+)=(%d+)=(%d+);$')
if token ~= fencing then return {-2} end
if worker ~= '' then
  local seen = tonumber(redis.call('ZSCORE', workersKey, worker))
  if seen and seen >= tonumber(liveSince) then redis.call('ZADD', workersKey, 'XX', now, worker) end
end
-- the lease's isolation group (G8): its domain-key's now, else its grant's ("" = none)
local groupOfLease = isolationOf(pr[8]) or ''
if groupNow ~= '-' then groupOfLease = groupNow end
-- until when a reservation lets the lease run (nil: none limits it)
local reservedUntilMs = nil
if tonumber(e) > now then
  -- reserved for another worker's fallback share (for this domain-key, its isolation group, or
  -- all): not extended, or — for a caller that keeps to its TTL, before the reservation holds —
  -- extended until it does at most (includes/reservations.lua)
  reservedUntilMs = pairReservedUntil(reservedKey, id, dk, groupOfLease, worker, honors, now)
  if reservedUntilMs == 0 then return {-2} end
end
if gone then tombstoneGone(base, dk, id, gone) end
local result
-- the pair's new field ig, when the renewal moved its hold to another isolation group
local setIsolation = nil
if tonumber(e) <= now then
  -- expired: it leaves the holders with a tombstone (a late release still scores it)
  tombstone(base, dk, id, hex, token, ttl, '0')
  if tonumber(e) > goneMax then goneMax = tonumber(e) end
  result = {-3}
else
  local t = tonumber(ttlMs)
  if t <= 0 then t = tonumber(ttl) end
  if reservedUntilMs and reservedUntilMs - now < t then t = reservedUntilMs - now end
  local newExp = now + t
  local lately = redis.call('HMGET', metaKey, 'lt', 'lta')
  noteTtl(metaKey, lately[1], lately[2], t, now)
  kept = kept .. hex .. '=' .. newExp .. '=' .. token .. '=' .. ttl .. ';'
  -- G8: the lease's hold in its isolation group follows its expiry: the group its domain-key has
  -- now (a lease from before a change that moved the key into a group is seen by the group), the
  -- pair's field ig when unknown
  local g, affinity = isolationOf(pr[8])
  if groupNow ~= '-' then
    g, affinity = nil, tonumber(affinityNow)
    if groupNow ~= '' then g = groupNow end
  end
  if g then holdInGroup(base, g, id, dk, newExp + affinity, now, true) end
  local ig = isolationField(groupNow, affinityNow)
  if groupNow ~= '-' and ig and (pr[8] or '') ~= ig then setIsolation = ig end
  count = count + 1
  if count == 1 or newExp < first then first = newExp end
  result = {1, newExp, t}
end
local u = tonumber(pr[2]) or 0
local gap, byEnd = gapOf(pr[5])
local set = {'h', kept}
if setIsolation then
  -- the pair's release then ends the hold in that group
  set[#set + 1] = 'ig'
  set[#set + 1] = setIsolation
end
-- G2: holders found expired (this one included) ended at their expiry
local n = tonumber(pr[6]) or 0
local moved = anchoredNext(n, goneMax, gap)
if byEnd and goneMax > (tonumber(pr[7]) or 0) then
  set[#set + 1] = 'e'
  set[#set + 1] = goneMax
end
if byEnd and moved ~= n then
  if moved > u then u = moved end
  set[#set + 1] = 'n'
  set[#set + 1] = moved
  set[#set + 1] = 'u'
  set[#set + 1] = u
end
local gcUntil = pairGc(set, pr[4], math.max(now, u))
redis.call('HSET', pairKey, unpack(set))
if gcUntil then redis.call('PEXPIRE', pairKey, gcUntil - now) end
setBusy(busyKey, id, u, count, pr[3], first, gap, now)
return result
