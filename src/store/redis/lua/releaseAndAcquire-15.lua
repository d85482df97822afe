--[[
  releaseAndAcquire: release a lease with its outcome, then acquire the next one, in one atomic
  step (SPEC §5 `next`). The acquire runs whatever the release answered. Both lie in one pool.

  KEYS[1..8]  the keys of releaseLease-8.lua: `P l:<hex>`, `P r:<dk>:<id>`, `P b:<dk>`,
              `P p:<id>`, `P idx`, `P q`, `P bl`, `P m`
  KEYS[9..15] the keys of acquireLease-7.lua: `P m`, `P q`, `P idx`, candidate index,
              `P b:<dk2>`, `P w`, `P s:<session>`
  where P = "<prefix>:{<pool>}:".

  ARGV[1..21]  the release arguments (see releaseLease-8.lua)
  ARGV[22]     now (epoch ms; "" = Redis TIME)
  ARGV[23..]   the acquire arguments (see acquireLease-7.lua ARGV[1..]; its now is not read,
               its seed is)

  Keys built in the script: `P p:<id>`, `P r:<dk>:<id>`, `P l:<hex>`, `P idx:t:<tier>` (as in
  both parts).

  Output (flat array): {releaseCode, <acquireLease output>...}
    releaseCode 1 released, -1 NOT_FOUND, -2 REVOKED, -3 EXPIRED.

  Error codes (ScriptCode): release -1 LeaseNotFound, -2 LeaseRevoked, -3 LeaseExpired; acquire
  -4 StalePolicy, -5 NoProxyAvailable.
]]
-- @include "base"
-- @include "proxy"
-- @include "pair"
-- @include "scoring"
-- @include "releaseCore"
-- @include "acquireCore"

local now = storeNow(ARGV[22])
local code = releaseLease({KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]}, ARGV, now)
local acquireArgs = {}
for i = RELEASE_ARGC + 2, #ARGV do acquireArgs[#acquireArgs + 1] = ARGV[i] end
math.randomseed(tonumber(acquireArgs[16]))
local reply = acquireLease({KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15]}, acquireArgs, now)
table.insert(reply, 1, code)
return reply
