--[[
  releaseAndAcquire: release a lease with its outcome, then acquire the next one, in one atomic
  step (SPEC §5 `next`). The acquire runs whatever the release answered. Both lie in one pool.

  KEYS: the keys of list `acquireKeys` (those of acquireLease-7.lua, the next lease's busy
  index `P b:<dk2>`), then those of list `releaseKeys` (those of releaseLease-8.lua); the order:
  src/store/redis/script-keys.ts.
  where P = "<prefix>:{<pool>}:".

  ARGV: the arguments of list `acquire`, then now (epoch ms; "" = Redis TIME), then the
  arguments of list `release` (src/store/redis/script-args.ts), then the wanted labels of the
  acquire (as in acquireLease-7.lua).
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
-- @include "isolation"
-- @include "scoring"
-- @include "releaseCore"
-- @include "workers"
-- @include "lately"
-- @include "acquireCore"

-- KEYS: the acquire's, then the release's (from rko + 1); ARGV: the acquire's, now (at nowAt),
-- the release's (from nowAt + 1), the labels
local rko, nowAt = {{argc.acquireKeys}}, {{argc.acquire}} + 1
kIdx = KEYS[rko + {{releaseKeys.index}}]
kQuarantine = KEYS[rko + {{releaseKeys.quarantine}}]
kBlacklist = KEYS[rko + {{releaseKeys.blacklist}}]
kMeta = KEYS[rko + {{releaseKeys.meta}}]
local now, nowText, nowUs = storeNow(ARGV[nowAt])
NOW_US = nowUs
local code = releaseLease(rko, nowAt, now)
local reply = acquireLease(KEYS, 0, ARGV, 0, nowAt + {{argc.release}} + 1, #ARGV, now, nowText)
table.insert(reply, 1, code)
return reply
