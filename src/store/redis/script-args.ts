/**
 * The arguments (ARGV) of the Lua scripts, by name: the one place their order is written. The
 * store builds every ARGV with `argv` (values given by name, put in this order), and the loader
 * (scripts.ts) bakes each `{{list.name}}` of a script's text into that argument's position (1 =
 * the first) and each `{{argc.list}}` into the list's length (the same for keys: script-keys.ts). A script binds its arguments to
 * named locals at its top, e.g. `local hex = ARGV[{{release.hex}}]`, or, for a list that starts
 * after others, `ARGV[at + {{release.hex}}]`. Moving, adding or removing an argument is an
 * edit of its list here: both sides follow; a script that names an argument no list has fails
 * to load.
 *
 * Arguments that a script takes after a list (ids, labels, entries of a repeated list) follow
 * it in the order the list's comment says.
 */

/** One ARGV entry. */
export type ScriptArg = string | number;

/**
 * Every argument list. P = "<prefix>:{<pool>}:", the start of every key of the pool (the scripts
 * build the keys they are not handed from it); `now` = epoch ms of the store clock, "" = Redis
 * TIME.
 */
export const SCRIPT_ARGS = {
  /**
   * An acquire (lua/includes/acquireCore.lua): acquireLease-7.lua takes it, then `now`, then the
   * wanted labels; releaseAndAcquire-15.lua and leaseBatch-n.lua take it as their docs say.
   * - policyVersion: the version the request was resolved with, "<ep>.<pv>"
   * - minIntervalMs: the policy's (adaptive pacing never goes below it)
   * - sessionKey "" = none; tier "" = any; requestId "" = none (no retry memory);
   *   proxyId "" = any (else only that proxy is granted, or nothing)
   * - hex: 32 random hex digits, the lease's holder entry in its pair; seed: an integer
   * - anchor: r (pacing from the previous lease's end) or g (from its grant)
   * - jitterMs 0 = none; adaptive 1 on, 0 off; maxIntervalMs: the adaptive cap
   * - shadowKeys: earlier domain-keys of the host joined by "\n" ("" = none)
   * - fallbackPool: 1 the worker keeps a fallback pool, 0 not, "-" it was recorded as seen
   *   moments ago (its last-seen time is left alone); yieldsLeases: 1 it yields its leases when
   *   the broker is unreachable, 0 not (recorded with it)
   * - identity: the caller's authenticated name ("" = none: the worker id is recorded as the
   *   proxy's last user)
   * - domainUseMs: record the worker's use of the domain-key, listed for this long after its
   *   last use ("" = not recorded: not asked for, or recorded moments ago)
   * - isolationGroup: the domain-key's isolation group ("" = none), whose hold the grant writes;
   *   affinityMs its affinity window; formerGroups: other groups whose holds are checked too,
   *   joined by "\n" ("" = none); joinedKeys: keys that joined the group since a retired policy
   *   set, whose live leases hold a proxy too, joined by "\n" ("" = none)
   * - grantUnknownExits: "1" = a proxy that shares its host and waits for its first probe may be
   *   granted, "0" = not (G9; lua/includes/exits.lua)
   * - honorsTtl: "1" = the caller keeps to the TTL its grant gives (a pair reserved for a silent
   *   worker from a later moment is granted until then; lua/includes/reservations.lua), "0" = not
   */
  acquire: [
    "base",
    "policyVersion",
    "domainKey",
    "workerId",
    "ttlMs",
    "maxConcurrency",
    "minIntervalMs",
    "banTtlMs",
    "sessionKey",
    "sessionTtlMs",
    "tier",
    "hex",
    "seed",
    "anchor",
    "jitterMs",
    "adaptive",
    "maxIntervalMs",
    "shadowKeys",
    "requestId",
    "proxyId",
    "fallbackPool",
    "yieldsLeases",
    "identity",
    "domainUseMs",
    "isolationGroup",
    "affinityMs",
    "formerGroups",
    "joinedKeys",
    "grantUnknownExits",
    "honorsTtl",
  ],
  /**
   * A release (lua/includes/releaseCore.lua): releaseLease-8.lua takes it, then `now`.
   * - token: the fencing token in decimals ("-" never matches); kind: S R B P T A (the outcome)
   * - u: the quarantine jitter draw, uniform in [0, 1); origin: the releasing store's instance
   *   id, published on the domain-key's release channel
   */
  release: ["base", "hex", "domainKey", "proxyId", "token", "kind", "latencyMs", "retryAfterMs", "u", "origin"],
  /**
   * renewLease-6.lua. ttlMs 0 = the lease's own; workerId "" = unknown; liveSince: epoch ms;
   * isolationGroup: the domain-key's isolation group now ("" = none, "-" = unknown: the group of
   * the lease's grant), affinityMs its window; honorsTtl as for an acquire.
   */
  renew: [
    "base",
    "hex",
    "domainKey",
    "proxyId",
    "token",
    "ttlMs",
    "now",
    "workerId",
    "liveSince",
    "isolationGroup",
    "affinityMs",
    "honorsTtl",
  ],
  /** leaseBatch-n.lua, then per operation `batchOp` and the operation's arguments. */
  batch: ["now"],
  /** One operation of leaseBatch-n.lua: its code (A, R, N) and how many arguments follow. */
  batchOp: ["code", "count"],
  /** reportOutcomes-4.lua, then one `report` per report. */
  reportOutcomes: ["base", "now"],
  /** One report of reportOutcomes-4.lua (kind S R B P T A; u the quarantine jitter draw). */
  report: ["proxyId", "domainKey", "kind", "latencyMs", "retryAfterMs", "banTtlMs", "u"],
  /** addProxies-3.lua, then one `proxySpec` per proxy. shards "" = no layout check. */
  addProxies: ["base", "initialScore", "shards"],
  /** One proxy of addProxies-3.lua; labels "\n" then "k=v\n" per label. */
  proxySpec: ["id", "url", "tier", "labels"],
  /** removeProxies-4.lua, then the proxy ids. */
  removeProxies: ["base"],
  /** restoreProxies-3.lua, then the proxy ids. */
  restoreProxies: ["base", "score"],
  /** recordHealth-5.lua. result p pass, f fail, e error; term "" = none; exitIp "" = none shown. */
  recordHealth: ["base", "now", "proxyId", "result", "u", "term", "exitIp"],
  /** listProxies-1.lua. after "" = from the start. */
  listProxies: ["base", "after", "size"],
  /** poolStats-5.lua. */
  poolStats: ["liveSince"],
  /** setPolicy-3.lua. keepMs, keepMax: how long and how many replaced sets are kept. */
  setPolicy: ["pattern", "json", "now", "keepMs", "keepMax"],
  /** deletePolicy-3.lua. */
  deletePolicy: ["pattern", "now", "keepMs", "keepMax"],
  /** listPolicies-4.lua. */
  listPolicies: ["now", "keepMs"],
  /** domainPacing-1.lua, then the domain-keys asked for (none = every adapted one). */
  domainPacing: ["base", "limit"],
  /** ensureEpoch-1.lua. expected "" = none; lost 1 or 0; since: when the loss was noticed ("" = now). */
  ensureEpoch: ["expected", "holdMs", "lost", "since", "now"],
  /** holdState-1.lua. */
  holdState: ["now"],
  /** domainUses-1.lua. since: records last used before it are dropped. */
  domainUses: ["since"],
  /** rememberDomainUses-1.lua, then one `domainUse` per record. */
  rememberDomainUses: ["now"],
  /** One record of rememberDomainUses-1.lua. */
  domainUse: ["workerId", "domainKey", "first", "last"],
  /** touchWorker-3.lua. listsAt: 0 = none said. */
  touchWorker: ["workerId", "now", "listsAt"],
  /** proxyAction-3.lua, then the proxy ids. action D E B U; domainKey "" = every domain. */
  proxyAction: ["base", "action", "domainKey", "ttlMs", "now"],
  /** campaign-2.lua. mode c campaign, r resign. */
  campaign: ["owner", "ttlMs", "mode", "now"],
  /** raisePacing-2.lua. */
  raisePacing: ["domainKey", "adaptiveMs", "learnedMs", "learnedAt", "now"],
  /** shardLayout-2.lua. */
  shardLayout: ["shards"],
  /** rememberWorkers-5.lua, then one `workerSeen` per worker. */
  rememberWorkers: ["now"],
  /** One worker of rememberWorkers-5.lua; fallbackAt, yieldsAt, listsAt and heardAt 0 = never. */
  workerSeen: ["workerId", "lastSeen", "fallbackAt", "yieldsAt", "listsAt", "heardAt"],
  /**
   * hearWorker-4.lua. heardAt 0 = none said; claimVersion "0" = no claim (claim: its JSON,
   * claims-codec.ts); keepMs: how long the claims key lives after this write; fresh "1": the
   * claim is its process's first (the ones before it are forgotten), "0" not.
   */
  hearWorker: ["workerId", "now", "heardAt", "claimVersion", "claim", "keepMs", "fresh"],
} as const;

/** The name of an argument list. */
export type ArgList = keyof typeof SCRIPT_ARGS;

/** The values of list `L`, by name. */
export type ArgValues<L extends ArgList> = { readonly [N in (typeof SCRIPT_ARGS)[L][number]]: ScriptArg };

/** The list that `{{argc.<list>}}` reads (no argument list may be named so). */
const ARGC = "argc";

/** The arguments of list `list` in its order. */
export function argv<L extends ArgList>(list: L, values: ArgValues<L>): ScriptArg[] {
  const names: readonly (keyof ArgValues<L>)[] = SCRIPT_ARGS[list];
  return names.map((name) => values[name]);
}

/** The number of arguments of list `list`. */
export function argc(list: ArgList): number {
  return SCRIPT_ARGS[list].length;
}

/**
 * The value of placeholder `{{<list>.<name>}}` (the position of `name` in list `list` of `lists`,
 * 1 = the first) or `{{argc.<list>}}` (the length of `list`); undefined when `list` is no list
 * (the placeholder is then a constant of another kind). Throws on a name its list lacks.
 */
export function argPlaceholder(placeholder: string, lists: Readonly<Record<string, readonly string[]>> = SCRIPT_ARGS): number | undefined {
  const dot = placeholder.indexOf(".");
  if (dot < 0) return undefined;
  const head = placeholder.slice(0, dot);
  const tail = placeholder.slice(dot + 1);
  if (head === ARGC) {
    const list = Object.hasOwn(lists, tail) ? lists[tail] : undefined;
    if (list === undefined) throw new Error(`{{${placeholder}}}: no argument list ${tail}`);
    return list.length;
  }
  const list = Object.hasOwn(lists, head) ? lists[head] : undefined;
  if (list === undefined) return undefined;
  const at = list.indexOf(tail);
  if (at < 0) throw new Error(`{{${placeholder}}}: list ${head} has no ${tail}`);
  return at + 1;
}
