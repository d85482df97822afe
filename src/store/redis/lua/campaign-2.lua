--[[
  campaign: a leader lease (one holder at a time across broker replicas, e.g. the health
  checker's): taken when free, kept (its TTL renewed) by its holder, given up on resign. Each new
  holder gets a term that is higher than every earlier one — max(last + 1, the store clock in ms),
  so it keeps increasing even after the counter was lost — which the holder's writes carry as a
  fencing token (a holder that lost the lease, e.g. paused past its TTL, is refused).

  KEYS[1] `<prefix>:{leader}:<name>`     holder "<owner>\n<term>\n<until>": held until `until`
                                          by the store clock (its key TTL is garbage collection)
  KEYS[2] `<prefix>:{leader}:<name>:t`   the last term given
  ARGV[1] owner id
  ARGV[2] ttlMs
  ARGV[3] c campaign (take or renew) | r resign
  ARGV[4] now (epoch ms; "" = Redis TIME)

  Keys built in the script: none.

  Output: {1 holding | 0 not, term of the holder (0 = none), holder ("" = none), ms until the
  holder's lease runs out (0 = none)}.

  Error codes: none.
]]
-- @include "base"

local now = storeNow(ARGV[4])
local owner, ttl = ARGV[1], tonumber(ARGV[2])
local cur = redis.call('GET', KEYS[1])
local holder, term, left = '', 0, 0
if cur then
  local h, t, u = string.match(cur, '^(.*)\n(%d+)\n(%d+)$')
  if h and tonumber(u) > now then holder, term, left = h, tonumber(t), tonumber(u) - now end
end
local function hold(t)
  redis.call('SET', KEYS[1], owner .. '\n' .. string.format('%d', t) .. '\n' .. string.format('%d', now + ttl), 'PX', ttl + 60000)
end
if ARGV[3] == 'r' then
  if holder == owner then redis.call('DEL', KEYS[1]) end
  return {0, 0, '', 0}
end
if holder ~= '' then
  if holder == owner then
    hold(term)
    return {1, term, holder, ttl}
  end
  return {0, term, holder, left}
end
local t = math.max((tonumber(redis.call('GET', KEYS[2])) or 0) + 1, now)
redis.call('SET', KEYS[2], string.format('%d', t))
hold(t)
return {1, t, owner, ttl}
