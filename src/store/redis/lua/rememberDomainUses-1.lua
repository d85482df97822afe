--[[
  rememberDomainUses: record domain-key uses as given, never moving a later record back: how a
  broker puts back what it knew of them after the store lost its state (docs/spec.md §7), as
  rememberWorkers does for the workers.

  KEYS: list `rememberDomainUsesKeys` (the order: src/store/redis/script-keys.ts):
    uses  `P wd`    hash: "<worker>\n<dk>" → "<first use>:<last use>" (epoch ms)
  where P = "<prefix>:{<pool>}:".

  ARGV: list `rememberDomainUses` (now: epoch ms, "" = Redis TIME), then a list `domainUse` per
  record: worker id, domain-key, first and last use (the order: src/store/redis/script-args.ts).

  Keys built in the script: none.

  Output: the number of records written.

  Error codes: none.
]]
local usesKey = KEYS[{{rememberDomainUsesKeys.uses}}]
local written = 0
for at = {{argc.rememberDomainUses}}, #ARGV - {{argc.domainUse}}, {{argc.domainUse}} do
  local field = ARGV[at + {{domainUse.workerId}}] .. '\n' .. ARGV[at + {{domainUse.domainKey}}]
  local last = tonumber(ARGV[at + {{domainUse.last}}])
  local was = redis.call('HGET', usesKey, field)
  local wasLast = was and tonumber(string.match(was, ':(%d+)$')) or -1
  if last > wasLast then
    redis.call('HSET', usesKey, field, ARGV[at + {{domainUse.first}}] .. ':' .. ARGV[at + {{domainUse.last}}])
    written = written + 1
  end
end
return written
