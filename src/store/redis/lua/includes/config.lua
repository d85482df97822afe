--[[
  The store's constants, baked into the script text when the scripts are loaded: scripts.ts
  replaces each name in double braces, wherever it stands in a script, by its number (args.ts
  `scriptConstants` lists them): the numbers of the broker's ScoringConfig (sdk/src/model/scoring.ts,
  SPEC §2) and the tombstone minimum. They stand in the code itself rather than in locals: a
  function that reads a local of the chunk captures it as an upvalue, and creating a closure costs
  per upvalue on every call. A script's SHA depends on them; they are fixed per store. No ARGV
  carries them.
]]

-- The score delta of an outcome kind (S R B P T A).
local function scoreDelta(kind)
  if kind == 'S' then return {{deltaSuccess}} end
  if kind == 'R' then return {{deltaRateLimited}} end
  if kind == 'B' then return {{deltaBlocked}} end
  if kind == 'P' then return {{deltaProxyError}} end
  if kind == 'T' then return {{deltaTargetError}} end
  return {{deltaAbandoned}}
end
