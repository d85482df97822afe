--[[
  Shared basics: the store clock and GC lengths.
  Times are epoch ms of the store's clock; Redis key TTLs are garbage collection only.
  Numbers go to redis.call as Lua numbers (Redis formats them exactly) unless their text is at
  hand already (the clock's, a value read from Redis): formatting a number costs more than the
  call around it. Replies carry integers as integers and scores as the strings Redis stored.
]]
local DAY_MS = 86400000
local WEEK_MS = 7 * DAY_MS

-- The store's clock: the caller's `now` when given, else Redis TIME (one clock for all replicas).
-- Answers the time in ms as a number and as its decimal text, and in µs as a number.
local function storeNow(arg)
  if arg ~= '' then
    local ms = tonumber(arg)
    return ms, arg, ms * 1000
  end
  local t = redis.call('TIME')
  -- seconds .. the first 3 of the 6 microsecond digits
  local us = string.rep('0', 6 - #t[2]) .. t[2]
  local text = t[1] .. string.sub(us, 1, 3)
  return tonumber(text), text, tonumber(t[1] .. us)
end
