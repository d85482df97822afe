--[[
  releaseLease: end a lease and apply its outcome (docs/store-semantics.md §release).

  KEYS: list `releaseKeys` (the order: src/store/redis/script-keys.ts):
    lease       `P l:<hex>`       tombstone of the lease (written when it ends expired; a lease
                                  released live is remembered in its pair's field t)
    pair        `P r:<dk>:<id>`   pair of the lease (its field h holds the live leases)
    busy        `P b:<dk>`        busy index of the domain-key
    proxy       `P p:<id>`        proxy record
    index       `P idx`           ACTIVE index
    quarantine  `P q`             quarantine zset
    blacklist   `P bl`            blacklist set
    meta        `P m`             pool meta hash (qn: earliest quarantine return)
  where P = "<prefix>:{<pool>}:".

  ARGV: the arguments of list `release` (src/store/redis/script-args.ts says what each means),
  then now (epoch ms; "" = Redis TIME).
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
-- @include "isolation"
-- @include "scoring"
-- @include "releaseCore"

kIdx = KEYS[{{releaseKeys.index}}]
kQuarantine = KEYS[{{releaseKeys.quarantine}}]
kBlacklist = KEYS[{{releaseKeys.blacklist}}]
kMeta = KEYS[{{releaseKeys.meta}}]
local now = storeNow(ARGV[{{argc.release}} + 1])
return {releaseLease(0, 0, now)}
