--[[
  renewLease: extend a held lease to now + ttl (docs/store-semantics.md §renew; G3). The lease
  is a holder entry of its pair; a lease that ended is found by its tombstone.

  KEYS[1] `P l:<hex>`       tombstone "<state>:<token>:<ttlMs>:<dk>\31<id>" of an ended lease
  KEYS[2] `P r:<dk>:<id>`   pair of the lease (its field h holds the live leases)
  KEYS[3] `P b:<dk>`        busy index of the domain-key
  KEYS[4] `P ws`            zset: worker id → last seen (the renewing worker is seen)
  KEYS[5] `P rsv`           hash: proxy id → the silent worker it is reserved for
  where P = "<prefix>:{<pool>}:".

  ARGV[1] P
  ARGV[2] lease hex
  ARGV[3] domain-key
  ARGV[4] proxy id
  ARGV[5] fencing token
  ARGV[6] ttlMs (0 = the lease's own ttl)
  ARGV[7] now (epoch ms; "" = Redis TIME)
  ARGV[8] worker id ("" = unknown)
  ARGV[9] live since (epoch ms): the worker is recorded as seen only if it was seen since then
  The tombstone minimum is baked into the script (includes/config.lua).

  Keys built in the script: `P l:<hex>` tombstones of holders found expired.

  Output: {1, expireAt} renewed; {-1} NOT_FOUND (unknown or released); {-2} REVOKED (a wrong
  token, or the proxy is reserved for another worker: not extended, it runs out at its expiry);
  {-3} EXPIRED (the holder leaves the pair, with a tombstone).

  Error codes (ScriptCode): -1 LeaseNotFound, -2 LeaseRevoked, -3 LeaseExpired.
]]
-- @include "base"
-- @include "pair"

local now = storeNow(ARGV[7])
local base, hex, dk, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local pr = redis.call('HMGET', KEYS[2], 'h', 'u', 'm', 'x', 'g', 'n', 'e')
local kept, count, first, gone, mine, goneMax = scanHolders(pr[1], now, hex)
if not mine then
  local rec = redis.call('GET', KEYS[1])
  if not rec then return {-1} end
  local state, token, _, check = string.match(rec, '^(%d):(%d+):(%d+):(.*)$')
  if not state or state == '1' or check ~= dk .. '\31' .. id then return {-1} end
  if token ~= ARGV[5] then return {-2} end
  return {-3}
end
local e, token, ttl = string.match(mine, '^%x+=(%d+)=(%d+)=(%d+);$')
if token ~= ARGV[5] then return {-2} end
local worker = ARGV[8]
if worker ~= '' then
  local seen = tonumber(redis.call('ZSCORE', KEYS[4], worker))
  if seen and seen >= tonumber(ARGV[9]) then redis.call('ZADD', KEYS[4], 'XX', now, worker) end
end
if tonumber(e) > now then
  -- reserved for another worker's fallback share: not extended
  local owner = redis.call('HGET', KEYS[5], id)
  if owner and owner ~= worker then return {-2} end
end
if gone then tombstoneGone(base, dk, id, gone) end
local result
if tonumber(e) <= now then
  -- expired: it leaves the holders with a tombstone (a late release still scores it)
  tombstone(base, dk, id, hex, token, ttl, '0')
  if tonumber(e) > goneMax then goneMax = tonumber(e) end
  result = {-3}
else
  local t = tonumber(ARGV[6])
  if t <= 0 then t = tonumber(ttl) end
  local newExp = now + t
  kept = kept .. hex .. '=' .. newExp .. '=' .. token .. '=' .. ttl .. ';'
  count = count + 1
  if count == 1 or newExp < first then first = newExp end
  result = {1, newExp}
end
local u = tonumber(pr[2]) or 0
local gap, byEnd = gapOf(pr[5])
local set = {'h', kept}
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
redis.call('HSET', KEYS[2], unpack(set))
if gcUntil then redis.call('PEXPIRE', KEYS[2], gcUntil - now) end
if count > 0 and count >= (tonumber(pr[3]) or 1) and first + gap > u then u = first + gap end
setBusy(KEYS[3], id, u, now)
return result
