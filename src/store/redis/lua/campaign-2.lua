--[[
  campaign: a leader lease (one holder at a time across broker replicas, e.g. the health
  checker's): taken when free, kept (its TTL renewed) by its holder, given up on resign. Each new
  holder gets a term that is higher than every earlier one — max(last + 1, the store clock in ms),
  so it keeps increasing even after the counter was lost — which the holder's writes carry as a
  fencing token (a holder that lost the lease, e.g. paused past its TTL, is refused).

  KEYS: list `campaignKeys` (the order: src/store/redis/script-keys.ts):
    holder  `<prefix>:{leader}:<name>`     holder "<owner>\n<term>\n<until>": held until `until`
                                            by the store clock (its key TTL is garbage collection)
    term    `<prefix>:{leader}:<name>:t`   the last term given
  ARGV: list `campaign` (the order: src/store/redis/script-args.ts):
    owner   owner id
    ttlMs
    mode    c campaign (take or renew) | r resign
    now     epoch ms; "" = Redis TIME

  Keys built in the script: none.

  Output: {1 holding | 0 not, term of the holder (0 = none), holder ("" = none), ms until the
  holder's lease runs out (0 = none)}.

  Error codes: none.
]]
-- @include "base"

local holderKey = KEYS[{{campaignKeys.holder}}]
local termKey = KEYS[{{campaignKeys.term}}]

local owner = ARGV[{{campaign.owner}}]
local ttl = tonumber(ARGV[{{campaign.ttlMs}}])
local mode = ARGV[{{campaign.mode}}]
local now = storeNow(ARGV[{{campaign.now}}])
local cur = redis.call('GET', holderKey)
local holder, term, left = '', 0, 0
if cur then
  local h, t, u = string.match(cur, '^(.*)\n(%d+)\n(%d+)$')
  if h and tonumber(u) > now then holder, term, left = h, tonumber(t), tonumber(u) - now end
end
local function hold(t)
  redis.call('SET', holderKey, owner .. '\n' .. string.format('%d', t) .. '\n' .. string.format('%d', now + ttl), 'PX', ttl + 60000)
end
if mode == 'r' then
  if holder == owner then redis.call('DEL', holderKey) end
  return {0, 0, '', 0}
end
if holder ~= '' then
  if holder == owner then
    hold(term)
    return {1, term, holder, ttl}
  end
  return {0, term, holder, left}
end
local t = math.max((tonumber(redis.call('GET', termKey)) or 0) + 1, now)
redis.call('SET', termKey, string.format('%d', t))
hold(t)
return {1, t, owner, ttl}
