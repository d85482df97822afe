--[[
  releaseLease: end a lease and apply its outcome (docs/store-semantics.md §release).

  KEYS[1] `P l:<hex>`       tombstone of the lease (written when it ends expired; a lease
                            released live is remembered in its pair's field t)
  KEYS[2] `P r:<dk>:<id>`   pair of the lease (its field h holds the live leases)
  KEYS[3] `P b:<dk>`        busy index of the domain-key
  KEYS[4] `P p:<id>`        proxy record
  KEYS[5] `P idx`           ACTIVE index
  KEYS[6] `P q`             quarantine zset
  KEYS[7] `P bl`            blacklist set
  KEYS[8] `P m`             pool meta hash (qn: earliest quarantine return)
  where P = "<prefix>:{<pool>}:".

  ARGV[1..10] the release arguments of includes/releaseCore.lua: P, lease hex, domain-key,
    proxy id, fencing token, outcome kind (S R B P T A), latencyMs, retryAfterMs, u (the
    quarantine jitter draw, uniform in [0, 1)), origin (published on release)
  ARGV[11] now (epoch ms; "" = Redis TIME)
  The numbers of SPEC §2 and the tombstone minimum are baked into the script
  (includes/config.lua).

  Keys built in the script: `P evs` (the event stream, includes/events.lua), `P idx:t:<tier>` and `P idx:l:<k>=<v>` of the proxy, `P l:<hex>`
  tombstones of other holders of the pair found expired, `P d:<dk>` and `P ad` (adaptive pacing
  of the domain-key); the channel `P ev:<dk>` (a release is published there).

  Output: {code}: 1 released, -1 NOT_FOUND, -2 REVOKED, -3 EXPIRED (outcome still applied).

  Error codes (ScriptCode): -1 LeaseNotFound, -2 LeaseRevoked, -3 LeaseExpired.
]]
-- @include "base"
-- @include "config"
-- @include "proxy"
-- @include "pair"
-- @include "scoring"
-- @include "releaseCore"

kIdx, kQuarantine, kBlacklist, kMeta = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local now = storeNow(ARGV[RELEASE_ARGC + 1])
return {releaseLease(0, 0, now)}
