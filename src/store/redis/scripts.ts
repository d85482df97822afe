/**
 * Loader and runner of the Lua scripts in ./lua (one per operation, bullmq style): reads each
 * `verbNoun-<numberOfKeys>.lua`, resolves `-- @include "name"` lines from ./lua/includes (each
 * include once per script), bakes the positions of the arguments and keys into the text
 * (`{{list.name}}`, see script-args.ts and script-keys.ts), then the store's constants (every `{{name}}` becomes the number, see
 * `ScriptConstants`), and registers every script once per client and constants
 * with ioredis `defineCommand` (ioredis then calls it by EVALSHA, falling back to EVAL once per
 * connection). A script's SHA thus depends on the constants, which are fixed per store.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";
import { toStoreError } from "./errors.js";
import { argPlaceholder, SCRIPT_ARGS, type ScriptArg } from "./script-args.js";
import { SCRIPT_KEY_LISTS } from "./script-keys.js";

export type { ScriptArg } from "./script-args.js";

/** A client the store can run on: one Redis node or a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * Number of KEYS of each script (checked against the file names when loading): the length of its
 * list in script-keys.ts.
 */
export const SCRIPT_KEYS = {
  acquireLease: 7,
  renewLease: 6,
  releaseLease: 8,
  releaseAndAcquire: 15,
  reportOutcomes: 4,
  addProxies: 3,
  removeProxies: 4,
  restoreProxies: 3,
  recordHealth: 5,
  listProxies: 1,
  poolStats: 5,
  setPolicy: 3,
  deletePolicy: 3,
  listPolicies: 4,
  domainPacing: 1,
  ensureEpoch: 1,
  holdState: 1,
  domainUses: 1,
  rememberDomainUses: 1,
  touchWorker: 3,
  reserve: 1,
  proxyAction: 3,
  campaign: 2,
  raisePacing: 2,
  shardLayout: 2,
  rememberWorkers: 5,
  hearWorker: 4,
} as const;

/**
 * Scripts whose number of keys varies per call (file `<name>-n.lua`; ioredis sends the number
 * of keys as the call's first argument).
 */
export const VARIADIC_SCRIPTS = ["leaseBatch"] as const;

/** The name of a script with a fixed number of keys (its file name without `-<keys>.lua`). */
export type FixedScriptName = keyof typeof SCRIPT_KEYS;

/** The name of a script whose number of keys varies per call. */
export type VariadicScriptName = (typeof VARIADIC_SCRIPTS)[number];

/** The name of a script. */
export type ScriptName = FixedScriptName | VariadicScriptName;

/** A tuple of `N` key names. */
type Keys<N extends number, T extends string[] = []> = T["length"] extends N ? T : Keys<N, [...T, string]>;

/** The KEYS of script `S`, exactly as many as it declares. */
export type ScriptKeys<S extends FixedScriptName> = Keys<(typeof SCRIPT_KEYS)[S]>;

/** A loaded script: its source with includes resolved. */
export interface LoadedScript {
  readonly name: ScriptName;
  /** undefined: given per call. */
  readonly numberOfKeys: number | undefined;
  readonly lua: string;
}

/**
 * Numbers baked into the scripts at load time: `{{name}}` in a Lua source becomes `name`'s value
 * (a finite number, written so that Lua reads back the same double).
 */
export type ScriptConstants = Readonly<Record<string, number>>;

const LUA_DIR = new URL("./lua/", import.meta.url);
const INCLUDE_DIR = new URL("./lua/includes/", import.meta.url);
const FILE_NAME = /^([A-Za-z]+)-(\d+|n)\.lua$/;
const INCLUDE_LINE = /^--\s*@include\s+"([A-Za-z0-9_]+)"\s*$/gm;
/** Command names on the client: a prefix keeps them apart from ioredis' own methods. */
const COMMAND_PREFIX = "pb_";
const PLACEHOLDER = /\{\{([A-Za-z0-9_.]+)\}\}/g;

let loaded: ReadonlyMap<ScriptName, LoadedScript> | undefined;
const baked = new Map<string, BakedScripts>();

/** The scripts with one set of constants baked in, and the tag that names their commands. */
export interface BakedScripts {
  /** Short hash of the constants: the commands are `pb_<tag>_<name>`. */
  readonly tag: string;
  readonly scripts: ReadonlyMap<ScriptName, LoadedScript>;
}

function isFixedScriptName(name: string): name is FixedScriptName {
  return Object.hasOwn(SCRIPT_KEYS, name);
}

function isVariadicScriptName(name: string): name is VariadicScriptName {
  return (VARIADIC_SCRIPTS as readonly string[]).includes(name);
}

/** Replace include lines by the files' content, each include once (nested includes too). */
function resolveIncludes(source: string, seen: Set<string>): string {
  return source.replace(INCLUDE_LINE, (_line, name: string) => {
    if (seen.has(name)) return `-- (included above: ${name})`;
    seen.add(name);
    const text = readFileSync(new URL(`${name}.lua`, INCLUDE_DIR), "utf8");
    return resolveIncludes(text, seen);
  });
}

/** Every list of named arguments or keys. */
const LISTS: Readonly<Record<string, readonly string[]>> = { ...SCRIPT_ARGS, ...SCRIPT_KEY_LISTS };

/**
 * `lua` with every `{{list.name}}` and `{{argc.list}}` of a list of arguments or keys replaced by
 * its number (script-args.ts, script-keys.ts); other placeholders are left for `bakeScripts`.
 * Throws on a name that its list lacks.
 */
export function bakeArgs(lua: string, lists: Readonly<Record<string, readonly string[]>> = LISTS): string {
  return lua.replace(PLACEHOLDER, (m, name: string) => {
    const n = argPlaceholder(name, lists);
    return n === undefined ? m : String(n);
  });
}

/**
 * Every script of ./lua, loaded once per process, its arguments' positions baked in. Throws when
 * one is missing or misnamed, or names an argument that no list has.
 */
export function loadScripts(): ReadonlyMap<ScriptName, LoadedScript> {
  if (loaded !== undefined) return loaded;
  const scripts = new Map<ScriptName, LoadedScript>();
  for (const file of readdirSync(LUA_DIR)) {
    const m = FILE_NAME.exec(file);
    if (m === null) continue;
    const [, name = "", keys = ""] = m;
    const lua = () => {
      try {
        return bakeArgs(resolveIncludes(readFileSync(new URL(file, LUA_DIR), "utf8"), new Set()));
      } catch (err: unknown) {
        throw new Error(`${file}: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
    if (isFixedScriptName(name)) {
      if (Number(keys) !== SCRIPT_KEYS[name]) throw new Error(`${file}: expected ${SCRIPT_KEYS[name]} keys`);
      scripts.set(name, { name, numberOfKeys: SCRIPT_KEYS[name], lua: lua() });
    } else if (isVariadicScriptName(name)) {
      if (keys !== "n") throw new Error(`${file}: expected ${name}-n.lua (its number of keys varies)`);
      scripts.set(name, { name, numberOfKeys: undefined, lua: lua() });
    } else {
      throw new Error(`unexpected Lua script ${file}`);
    }
  }
  for (const name of [...Object.keys(SCRIPT_KEYS), ...VARIADIC_SCRIPTS]) {
    if (!scripts.has(name as ScriptName)) throw new Error(`Lua script ${name} is missing`);
  }
  loaded = scripts;
  return scripts;
}

/**
 * A constant as Lua source: JavaScript's shortest round-trip form, which Lua reads back exactly;
 * a negative one in parentheses (no `--` can arise after a minus sign).
 */
function luaNumber(name: string, value: number | undefined): string {
  if (value === undefined) throw new Error(`Lua constant {{${name}}} has no value`);
  if (!Number.isFinite(value)) throw new Error(`Lua constant {{${name}}} is not finite: ${value}`);
  return value < 0 ? `(${String(value)})` : String(value);
}

/**
 * Every script with `constants` baked in (cached per distinct constants). Throws when a script
 * names a constant that `constants` lacks.
 */
export function bakeScripts(constants: ScriptConstants): BakedScripts {
  const names = Object.keys(constants).sort();
  const key = JSON.stringify(names.map((n) => [n, constants[n]]));
  const found = baked.get(key);
  if (found !== undefined) return found;
  const tag = createHash("sha1").update(key).digest("hex").slice(0, 10);
  const scripts = new Map<ScriptName, LoadedScript>();
  for (const [name, script] of loadScripts()) {
    const lua = script.lua.replace(PLACEHOLDER, (_m, c: string) => luaNumber(c, constants[c]));
    scripts.set(name, { ...script, lua });
  }
  const result: BakedScripts = { tag, scripts };
  if (baked.size > 64) baked.clear();
  baked.set(key, result);
  return result;
}

/** A script command as ioredis adds it to the client. */
type ScriptCommand = (...args: ScriptArg[]) => Promise<unknown>;

function isScriptCommand(value: unknown): value is ScriptCommand {
  return typeof value === "function";
}

const registered = new WeakMap<RedisClient, Set<string>>();

/**
 * Register every script with `constants` baked in on `client` (once per client and constants);
 * answers the command name prefix of these scripts (`pb_<tag>_`).
 */
export function registerScripts(client: RedisClient, constants: ScriptConstants): string {
  const { tag, scripts } = bakeScripts(constants);
  const prefix = `${COMMAND_PREFIX}${tag}_`;
  let tags = registered.get(client);
  if (tags === undefined) {
    tags = new Set();
    registered.set(client, tags);
  }
  if (tags.has(tag)) return prefix;
  for (const script of scripts.values()) {
    client.defineCommand(
      prefix + script.name,
      script.numberOfKeys === undefined ? { lua: script.lua } : { lua: script.lua, numberOfKeys: script.numberOfKeys },
    );
  }
  tags.add(tag);
  return prefix;
}

/**
 * Runs the scripts (and the few plain commands) of the store on one client. Every call goes
 * through `run` or `call`: a backend failure rejects with `StoreUnavailableError` (see
 * errors.ts), never with an empty answer. Until the client has been ready once, a call waits up
 * to `readyTimeoutMs` for the first connection (the offline queue is off); after that, calls
 * while disconnected fail at once.
 */
export class ScriptRunner {
  private sawReady: boolean;
  private readonly firstReady: Promise<void>;
  private readonly prefix: string;

  constructor(
    private readonly client: RedisClient,
    private readonly readyTimeoutMs: number,
    constants: ScriptConstants,
  ) {
    this.prefix = registerScripts(client, constants);
    this.sawReady = client.status === "ready";
    this.firstReady = this.sawReady
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          client.once("ready", () => {
            this.sawReady = true;
            resolve();
          });
        });
  }

  /** Run script `name` with its keys and arguments; resolves with the raw reply. */
  async run<S extends FixedScriptName>(name: S, keys: ScriptKeys<S> & readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    const keyList: readonly string[] = keys;
    return this.invoke(name, [...keyList, ...args]);
  }

  /** Run script `name`, whose number of keys varies, with `keys` and `args`. */
  async runVariadic(name: VariadicScriptName, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    return this.invoke(name, [keys.length, ...keys, ...args]);
  }

  private invoke(name: ScriptName, argv: ScriptArg[]): Promise<unknown> {
    const command: unknown = Reflect.get(this.client, this.prefix + name);
    if (!isScriptCommand(command)) throw new Error(`script ${name} is not registered`);
    return this.call(() => command.apply(this.client, argv));
  }

  /** Run one client call with the store's readiness wait and error mapping. */
  async call<T>(fn: (client: RedisClient) => Promise<T>): Promise<T> {
    if (!this.sawReady) await this.waitFirstReady();
    try {
      return await fn(this.client);
    } catch (err: unknown) {
      throw toStoreError(err);
    }
  }

  private async waitFirstReady(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.readyTimeoutMs);
      timer.unref();
    });
    await Promise.race([this.firstReady, timeout]);
    clearTimeout(timer);
  }
}
