--[[
  The history of a pool's policy sets (`P polh`, a list, newest first): each entry is one set
  that a change replaced, "<retiredAt>\n" followed by "<pattern>\t<policy JSON>\n" per policy
  (patterns and JSON hold neither tabs nor line breaks). A host whose domain-key a change moved
  must not be granted under its new key while a lease under the old one may still run: the
  broker derives those old keys from the history. Needs the include base.
]]

-- The retiredAt of a history entry.
local function historyTime(entry)
  return tonumber(string.match(entry, '^(%d+)\n')) or 0
end

-- Push the current set of `polKey` onto the history `histKey` (at `now`), then keep only the
-- `max` newest entries replaced within `keep` ms.
local function retirePolicies(polKey, histKey, now, keep, max)
  local all = redis.call('HGETALL', polKey)
  local parts = {string.format('%d', now), '\n'}
  for i = 1, #all, 2 do
    parts[#parts + 1] = all[i] .. '\t' .. all[i + 1] .. '\n'
  end
  redis.call('LPUSH', histKey, table.concat(parts))
  redis.call('LTRIM', histKey, 0, max - 1)
  for _ = 1, max do
    local last = redis.call('LINDEX', histKey, -1)
    if not last or historyTime(last) + keep > now then break end
    redis.call('RPOP', histKey)
  end
  redis.call('PEXPIRE', histKey, keep)
end
