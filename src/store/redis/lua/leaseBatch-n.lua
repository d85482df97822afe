--[[
  leaseBatch: several acquires, releases and releases-with-next of one pool in one script call.
  The broker coalesces the lease operations that reach it in one turn of its event loop: the
  call's fixed cost (EVALSHA, the client's command, the definitions of this script's functions)
  is paid once per batch instead of once per operation. Each operation is still its own atomic
  step, exactly as acquireLease-7.lua, releaseLease-8.lua or releaseAndAcquire-15.lua would run it
  alone, in the order given; an error in one (caught by pcall) answers that operation alone, and
  the others go on.

  KEYS     the operations' keys one after another (the number of keys is the call's first
           argument): an acquire's (list `acquireKeys`, those of acquireLease-7.lua), a
           release's (list `releaseKeys`, those of releaseLease-8.lua), a release-with-next's
           acquire keys and then its release keys (src/store/redis/script-keys.ts).
  ARGV     the arguments of list `batch` (now: epoch ms, "" = Redis TIME, read once for the
           batch), then per operation those of list `batchOp` (its code: A acquire, R release,
           N release-with-next; the number c of its arguments) and its c arguments: an
           acquire's (list `acquire`) and its wanted labels; a release's (list `release`); a
           release-with-next's release arguments, then the acquire's and its labels. The lists
           are in src/store/redis/script-args.ts.
  where every key lies under one pool's hash tag.

  Output (flat array): per operation, the length n of its reply, then that reply as the script
  of its own would answer it (acquireLease's array, releaseLease's {code},
  releaseAndAcquire's {code, acquire...}); n = -1 and an error message when it failed.
]]
-- @include "base"
-- @include "config"
-- @include "proxy"
-- @include "pair"
-- @include "isolation"
-- @include "scoring"
-- @include "releaseCore"
-- @include "workers"
-- @include "lately"
-- @include "acquireCore"

-- One acquire: keys from KEYS[ko + 1] (list `acquireKeys`), arguments ARGV[ao + 1..e] (its
-- labels after list `acquire`), read in place.
local function batchAcquire(ko, ao, e, now, nowText)
  return acquireLease(KEYS, ko, ARGV, ao, ao + {{argc.acquire}} + 1, e, now, nowText)
end

-- One release: keys from KEYS[ko + 1] (list `releaseKeys`), arguments from ARGV[ao + 1] (list
-- `release`).
local function batchRelease(ko, ao, now)
  kIdx = KEYS[ko + {{releaseKeys.index}}]
  kQuarantine = KEYS[ko + {{releaseKeys.quarantine}}]
  kBlacklist = KEYS[ko + {{releaseKeys.blacklist}}]
  kMeta = KEYS[ko + {{releaseKeys.meta}}]
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

local now, nowText, nowUs = storeNow(ARGV[{{batch.now}}])
NOW_US = nowUs
local out = {}
local ko, ao = 0, {{argc.batch}}
while ao < #ARGV do
  local op, c = ARGV[ao + {{batchOp.code}}], tonumber(ARGV[ao + {{batchOp.count}}])
  local a0 = ao + {{argc.batchOp}}
  if op == 'A' then
    local ok, reply = pcall(batchAcquire, ko, a0, a0 + c, now, nowText)
    if ok then append(out, reply) else appendError(out, reply) end
    ko = ko + {{argc.acquireKeys}}
  elseif op == 'R' then
    local ok, reply = pcall(batchRelease, ko, a0, now)
    if ok then append(out, reply) else appendError(out, reply) end
    ko = ko + {{argc.releaseKeys}}
  else
    local ok, code = pcall(batchRelease, ko + {{argc.acquireKeys}}, a0, now)
    if ok then
      local aok, reply = pcall(batchAcquire, ko, a0 + {{argc.release}}, a0 + c, now, nowText)
      if aok then
        table.insert(reply, 1, code)
        append(out, reply)
      else
        appendError(out, reply)
      end
    else
      appendError(out, code)
    end
    ko = ko + {{argc.acquireKeys}} + {{argc.releaseKeys}}
  end
  ao = a0 + c
end
return out
