--[[
  Shared basics: the store clock and GC lengths.
  Times are epoch ms of the store's clock; Redis key TTLs are garbage collection only.
  Numbers go to redis.call as Lua numbers (Redis formats them exactly); replies carry integers
  as integers and scores as the strings Redis stored.
]]
local DAY_MS = 86400000
local WEEK_MS = 7 * DAY_MS

-- The store's clock: the caller's `now` when given, else Redis TIME (one clock for all replicas).
local function storeNow(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
