--[[
  The pool's event stream `P evs` (a capped Redis stream, about the last 10,000 entries): state
  changes that an operator watches (ProxyAdmin.WatchEvents) — a pair banned after a BLOCKED or
  cooled down after a RATE_LIMITED, a proxy quarantined or blacklisted. Fields: k kind, p proxy id, d domain-key, x detail (for a
  ban or a quarantine: until, epoch ms). Admin actions, policy changes and leader changes are
  appended by the broker itself.
]]
local EVENTS_MAXLEN = 10000

local function emitEvent(base, kind, id, dk, detail)
  redis.call('XADD', base .. 'evs', 'MAXLEN', '~', EVENTS_MAXLEN, '*', 'k', kind, 'p', id, 'd', dk, 'x', detail)
end
