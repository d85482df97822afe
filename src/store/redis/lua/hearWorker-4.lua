--[[
  hearWorker: a worker's ping (it keeps a fallback pool, docs/spec.md §7). It is live now and keeps
  a fallback pool (as touchWorker records); it was in contact with the broker both ways up to
  `heardAt`, the broker time of the latest pong it received (never moved back); and, with a
  claim, that claim is its latest: the one it had is kept as the one before, unless the new one
  repeats its version (a worker sends a claim again until a pong acknowledges it) or is `fresh`,
  its process's first (those before it were a predecessor's under the same worker id, not in
  use) and not older than the latest kept.

  KEYS: list `hearWorkerKeys` (the order: src/store/redis/script-keys.ts):
    workers          `P ws`    workers: zset worker id → last seen (epoch ms), bounded (includes/workers.lua)
    fallbackWorkers  `P wf`    zset worker id → the last time it said it keeps a fallback pool
    heardWorkers     `P wh`    zset worker id → the broker time of the latest pong it received
    claims           `P wc:<worker id>`  string "<version>\t<latest>[\t<the one before>]" (claims-codec.ts),
                     expiring `keepMs` after the last write (a worker silent that long has nothing reserved)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `hearWorker` (the order: src/store/redis/script-args.ts):
    workerId
    now           epoch ms; "" = Redis TIME
    heardAt       epoch ms; 0 = none said
    claimVersion  decimal; "0" = no claim
    claim         the claim's JSON (claims-codec.ts)
    keepMs        how long the claims key lives
    fresh         "1": the claim is its process's first; "0": not

  Keys built in the script: none.

  Output: 1.

  Error codes: none.
]]
-- @include "base"
-- @include "workers"

local workersKey = KEYS[{{hearWorkerKeys.workers}}]
local fallbackWorkersKey = KEYS[{{hearWorkerKeys.fallbackWorkers}}]
local heardKey = KEYS[{{hearWorkerKeys.heardWorkers}}]
local claimsKey = KEYS[{{hearWorkerKeys.claims}}]

local worker = ARGV[{{hearWorker.workerId}}]
local now, nowText = storeNow(ARGV[{{hearWorker.now}}])
local heardAt = ARGV[{{hearWorker.heardAt}}]
local version = ARGV[{{hearWorker.claimVersion}}]

seeWorker(workersKey, fallbackWorkersKey, worker, true, now, nowText)
if tonumber(heardAt) > 0 and redis.call('ZADD', heardKey, 'GT', heardAt, worker) == 1 then trimWorkers(heardKey, now) end
if version ~= '0' then
  local claim = ARGV[{{hearWorker.claim}}]
  local old = redis.call('GET', claimsKey)
  local value = version .. '\t' .. claim
  if old then
    local v, latest = string.match(old, '^(%d+)\t([^\t]*)')
    -- a new process's first claim: the predecessor's are forgotten (the value is the new one alone)
    local forget = v and ARGV[{{hearWorker.fresh}}] == '1' and tonumber(v) <= tonumber(version)
    if v == version and not forget then
      value = value .. string.sub(old, #v + #latest + 2)
    elseif v and not forget then
      value = value .. '\t' .. latest
    end
  end
  redis.call('SET', claimsKey, value, 'PX', ARGV[{{hearWorker.keepMs}}])
end
return 1
