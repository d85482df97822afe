--[[
  releaseAndAcquire: release a lease with its outcome, then acquire the next one, in one atomic
  step (SPEC §5 `next`). The acquire runs whatever the release answered. Both lie in one pool.

  KEYS[1..7]  the keys of acquireLease-7.lua: `P m`, `P q`, `P idx`, candidate index,
              `P b:<dk2>`, `P ws`, `P s:<session>`
  KEYS[8..15] the keys of releaseLease-8.lua: `P l:<hex>`, `P r:<dk>:<id>`, `P b:<dk>`,
              `P p:<id>`, `P idx`, `P q`, `P bl`, `P m`
  where P = "<prefix>:{<pool>}:".

  ARGV[1..22]  the acquire arguments (see acquireLease-7.lua ARGV[1..22])
  ARGV[23]     now (epoch ms; "" = Redis TIME)
  ARGV[24..33] the release arguments (see releaseLease-8.lua ARGV[1..10])
  ARGV[34..]   the wanted labels of the acquire (see acquireLease-7.lua ARGV[24..])
  The numbers of SPEC §2 and the tombstone minimum are baked into the script
  (includes/config.lua). The acquire comes first in KEYS and ARGV so that it reads them in place.

  Keys built in the script: `P evs` (the event stream, includes/events.lua), `P p:<id>`, `P r:<dk>:<id>`, `P l:<hex>`, `P idx:t:<tier>`,
  `P idx:l:<k>=<v>`, `P d:<dk>`, `P ad`, `P wf`, the channel `P ev:<dk>`, and those of shadow domain-keys (as in both parts).

  Output (flat array): {releaseCode, <acquireLease output>...}
    releaseCode 1 released, -1 NOT_FOUND, -2 REVOKED, -3 EXPIRED.

  Error codes (ScriptCode): release -1 LeaseNotFound, -2 LeaseRevoked, -3 LeaseExpired; acquire
  -4 StalePolicy, -5 NoProxyAvailable.
]]
-- @include "base"
-- @include "config"
-- @include "proxy"
-- @include "pair"
-- @include "scoring"
-- @include "releaseCore"
-- @include "workers"
-- @include "acquireCore"

kIdx, kQuarantine, kBlacklist, kMeta = KEYS[12], KEYS[13], KEYS[14], KEYS[15]
local now, nowText, nowUs = storeNow(ARGV[ACQUIRE_ARGC + 1])
NOW_US = nowUs
local code = releaseLease(7, ACQUIRE_ARGC + 1, now)
local reply = acquireLease(KEYS, ARGV, ACQUIRE_ARGC + 2 + RELEASE_ARGC, now, nowText)
table.insert(reply, 1, code)
return reply
