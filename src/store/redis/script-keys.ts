/**
 * The keys (KEYS) of the Lua scripts, by name: the one place their order is written, as
 * script-args.ts is for their arguments. The store builds every KEYS with `keyv` (key names given
 * by name, put in this order); a script binds them to named locals at its top, e.g.
 * `local busy = KEYS[{{acquireKeys.busy}}]`, or `KEYS[at + {{releaseKeys.pair}}]` for a list that
 * starts after others, and the loader bakes each `{{<list>.<name>}}` into that key's position
 * and `{{argc.<list>}}` into the list's length. The number of keys of each script (scripts.ts
 * `SCRIPT_KEYS`, and its file name) is the length of its list (of both, for
 * releaseAndAcquire-15.lua: the acquire's, then the release's).
 *
 * P = "<prefix>:{<pool>}:"; keys.ts says what each key holds.
 */

export const SCRIPT_KEY_LISTS = {
  /** An acquire (lua/includes/acquireCore.lua). candidates: the tier's index, or `P idx` for any
   * tier; session: the session binding, any key of the pool when the request has no session. */
  acquireKeys: ["meta", "quarantine", "index", "candidates", "busy", "workers", "session"],
  /** A release (lua/includes/releaseCore.lua). lease: the lease's tombstone `P l:<hex>`. */
  releaseKeys: ["lease", "pair", "busy", "proxy", "index", "quarantine", "blacklist", "meta"],
  renewKeys: ["lease", "pair", "busy", "workers", "reserved", "meta"],
  reportOutcomesKeys: ["index", "quarantine", "blacklist", "meta"],
  addProxiesKeys: ["all", "index", "meta"],
  removeProxiesKeys: ["all", "index", "quarantine", "blacklist"],
  restoreProxiesKeys: ["index", "quarantine", "blacklist"],
  recordHealthKeys: ["proxy", "index", "quarantine", "blacklist", "meta"],
  listProxiesKeys: ["all"],
  poolStatsKeys: ["all", "index", "quarantine", "blacklist", "workers"],
  setPolicyKeys: ["policies", "meta", "history"],
  deletePolicyKeys: ["policies", "meta", "history"],
  listPoliciesKeys: ["policies", "meta", "history", "all"],
  domainPacingKeys: ["adapted"],
  ensureEpochKeys: ["meta"],
  holdStateKeys: ["meta"],
  domainUsesKeys: ["uses"],
  rememberDomainUsesKeys: ["uses"],
  touchWorkerKeys: ["workers", "fallbackWorkers", "listsWorkers"],
  reserveKeys: ["reserved"],
  proxyActionKeys: ["index", "quarantine", "meta"],
  /** A leader lease (keys.ts `KeyBuilder.leader`): its holder and its last term. */
  campaignKeys: ["holder", "term"],
  /** pacing: the domain-key's adaptive pacing `P d:<dk>`. */
  raisePacingKeys: ["pacing", "adapted"],
  shardLayoutKeys: ["meta", "all"],
  rememberWorkersKeys: ["workers", "fallbackWorkers", "yieldingWorkers", "listsWorkers", "heardWorkers"],
  /** claims: the worker's own `P wc:<worker id>`. */
  hearWorkerKeys: ["workers", "fallbackWorkers", "heardWorkers", "claims"],
} as const;

/** The name of a key list. */
export type KeyList = keyof typeof SCRIPT_KEY_LISTS;

/** The key names of list `L`, by name. */
export type KeyValues<L extends KeyList> = { readonly [N in (typeof SCRIPT_KEY_LISTS)[L][number]]: string };

/** A string for each name of the tuple `T`. */
type Strings<T extends readonly string[]> = { -readonly [I in keyof T]: string };

/** As many strings as list `L` has keys, in a tuple (the length `ScriptKeys` checks). */
export type KeyTuple<L extends KeyList> = Strings<(typeof SCRIPT_KEY_LISTS)[L]>;

/** The keys of list `list` in its order. */
export function keyv<L extends KeyList>(list: L, values: KeyValues<L>): KeyTuple<L> {
  const names: readonly (keyof KeyValues<L>)[] = SCRIPT_KEY_LISTS[list];
  return names.map((name) => values[name]) as KeyTuple<L>;
}
