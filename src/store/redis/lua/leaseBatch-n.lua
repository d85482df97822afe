--[[
  leaseBatch: several acquires, releases and releases-with-next of one pool in one script call.
  The broker coalesces the lease operations that reach it in one turn of its event loop: the
  call's fixed cost (EVALSHA, the client's command, the definitions of this script's functions)
  is paid once per batch instead of once per operation. Each operation is still its own atomic
  step, exactly as acquireLease-7.lua, releaseLease-8.lua or releaseAndAcquire-15.lua would run it
  alone, in the order given; an error in one (caught by pcall) answers that operation alone, and
  the others go on.

  KEYS     the operations' keys one after another (the number of keys is the call's first
           argument): an acquire's 7 (those of acquireLease-7.lua), a release's 8 (those of
           releaseLease-8.lua), a release-with-next's 7 acquire keys and then its 8 release keys.
  ARGV[1]  now (epoch ms; "" = Redis TIME, read once for the batch)
  ARGV[2..] per operation: its code (A acquire, R release, N release-with-next), its number of
           arguments c, then its c arguments: an acquire's 22 (acquireLease-7.lua ARGV[1..22])
           and its wanted labels; a release's 10 (releaseLease-8.lua ARGV[1..10]); a
           release-with-next's 10 release arguments, then the acquire's 22 and its labels.
  where every key lies under one pool's hash tag.

  Output (flat array): per operation, the length n of its reply, then that reply as the script
  of its own would answer it (acquireLease's array, releaseLease's {code},
  releaseAndAcquire's {code, acquire...}); n = -1 and an error message when it failed.
]]
-- @include "base"
-- @include "config"
-- @include "proxy"
-- @include "pair"
-- @include "scoring"
-- @include "releaseCore"
-- @include "workers"
-- @include "acquireCore"

-- One acquire: keys KEYS[ko + 1..7], arguments ARGV[ao + 1..e] (labels from the 23rd).
local function batchAcquire(ko, ao, e, now, nowText)
  return acquireLease({unpack(KEYS, ko + 1, ko + 7)}, {unpack(ARGV, ao + 1, e)}, ACQUIRE_ARGC + 1, now, nowText)
end

-- One release: keys KEYS[ko + 1..8], arguments ARGV[ao + 1..10].
local function batchRelease(ko, ao, now)
  kIdx, kQuarantine, kBlacklist, kMeta = KEYS[ko + 5], KEYS[ko + 6], KEYS[ko + 7], KEYS[ko + 8]
  return releaseLease(ko, ao, now)
end

-- Append a reply (a table, or one value) to `out`, after its length.
local function append(out, reply)
  if type(reply) ~= 'table' then reply = {reply} end
  local n = #out
  out[n + 1] = #reply
  for i = 1, #reply do out[n + 1 + i] = reply[i] end
end

-- Append the error of a failed operation.
local function appendError(out, err)
  if type(err) == 'table' then err = err.err end
  local n = #out
  out[n + 1] = -1
  out[n + 2] = tostring(err)
end

local now, nowText, nowUs = storeNow(ARGV[1])
NOW_US = nowUs
local out = {}
local ko, ao = 0, 1
while ao < #ARGV do
  local op, c = ARGV[ao + 1], tonumber(ARGV[ao + 2])
  local a0 = ao + 2
  if op == 'A' then
    local ok, reply = pcall(batchAcquire, ko, a0, a0 + c, now, nowText)
    if ok then append(out, reply) else appendError(out, reply) end
    ko = ko + 7
  elseif op == 'R' then
    local ok, reply = pcall(batchRelease, ko, a0, now)
    if ok then append(out, reply) else appendError(out, reply) end
    ko = ko + 8
  else
    local ok, code = pcall(batchRelease, ko + 7, a0, now)
    if ok then
      local aok, reply = pcall(batchAcquire, ko, a0 + RELEASE_ARGC, a0 + c, now, nowText)
      if aok then
        table.insert(reply, 1, code)
        append(out, reply)
      else
        appendError(out, reply)
      end
    else
      appendError(out, code)
    end
    ko = ko + 15
  end
  ao = a0 + c
end
return out
