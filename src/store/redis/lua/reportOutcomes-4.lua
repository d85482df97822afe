--[[
  reportOutcomes: apply outcomes observed without a lease of this store (an SDK's fallback pool
  replaying them, SPEC §7) like a release's outcome (docs/store-semantics.md §release,
  "Applying an outcome"): score, counters, EWMA, the pair's cool-down or ban (for the report's
  banTtlMs, which the pair remembers), busy index — except that a report never takes a score
  below the floor, so reports alone never quarantine or blacklist a proxy. Reports on proxies the
  pool does not know are skipped. One call per batch (the caller chunks large batches).

  KEYS: list `reportOutcomesKeys` (the order: src/store/redis/script-keys.ts):
    index       `P idx`   ACTIVE index
    quarantine  `P q`     quarantine zset
    blacklist   `P bl`    blacklist set
    meta        `P m`     pool meta hash (qn: earliest quarantine return)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `reportOutcomes` (base: P; now: epoch ms, "" = Redis TIME), then a list `report`
  per report: proxy id, domain-key, outcome kind (S R B P T A), latencyMs, retryAfterMs,
  banTtlMs, u (the quarantine jitter draw, uniform in [0, 1)) (the order: src/store/redis/script-args.ts).
  The numbers of SPEC §2 and the tombstone minimum are baked into the script
  (includes/config.lua).

  Keys built in the script (same {pool} tag): `P evs` (the event stream, includes/events.lua), `P p:<id>` proxy, `P r:<dk>:<id>` pair,
  `P b:<dk>` busy index, `P idx:t:<tier>` and `P idx:l:<k>=<v>` of the proxy, `P l:<hex>`
  tombstones of holders of the pair found expired, `P d:<dk>` and `P ad` (adaptive pacing).

  Output: {applied}: how many reports were applied (their proxy exists).

  Error codes: none (an unknown proxy is skipped, not counted).
]]
-- @include "base"
-- @include "config"
-- @include "proxy"
-- @include "pair"
-- @include "isolation"
-- @include "scoring"
-- @include "releaseCore"

kIdx = KEYS[{{reportOutcomesKeys.index}}]
kQuarantine = KEYS[{{reportOutcomesKeys.quarantine}}]
kBlacklist = KEYS[{{reportOutcomesKeys.blacklist}}]
kMeta = KEYS[{{reportOutcomesKeys.meta}}]
local base = ARGV[{{reportOutcomes.base}}]
local now = storeNow(ARGV[{{reportOutcomes.now}}])
local applied = 0
for at = {{argc.reportOutcomes}}, #ARGV - {{argc.report}}, {{argc.report}} do
  local id = ARGV[at + {{report.proxyId}}]
  local dk = ARGV[at + {{report.domainKey}}]
  local kind = ARGV[at + {{report.kind}}]
  local latency = ARGV[at + {{report.latencyMs}}]
  local retryAfter = ARGV[at + {{report.retryAfterMs}}]
  local banTtl = ARGV[at + {{report.banTtlMs}}]
  local u = ARGV[at + {{report.u}}]
  local proxyKey = base .. 'p:' .. id
  if redis.call('EXISTS', proxyKey) == 1 then
    local pk = base .. 'r:' .. dk .. ':' .. id
    local pr = readPair(pk)
    local kept, count, first, gone, _, goneMax = scanHolders(pr[PAIR_H], now, nil)
    local set = {}
    if gone then
      tombstoneGone(base, dk, id, gone)
      set[1], set[2] = 'h', kept
    end
    local moved = endLeases(pr, goneMax, set)
    -- the pair remembers the report's ban length, as after a grant
    if pr[PAIR_BT] ~= banTtl then
      set[#set + 1] = 'bt'
      set[#set + 1] = banTtl
      pr[PAIR_BT] = banTtl
    end
    applyOutcome(base, id, dk, pk, base .. 'b:' .. dk, proxyKey, kind, tonumber(latency),
      tonumber(retryAfter), u, now, set, pr, count, first, moved, true)
    applied = applied + 1
  end
end
return {applied}
