/**
 * Loader and runner of the Lua scripts in ./lua (one per operation, bullmq style): reads each
 * `verbNoun-<numberOfKeys>.lua`, resolves `-- @include "name"` lines from ./lua/includes (each
 * include once per script), and registers every script once per client with ioredis
 * `defineCommand` (ioredis then calls it by EVALSHA, falling back to EVAL once per connection).
 */
import { readdirSync, readFileSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";
import { toStoreError } from "./errors.js";

/** A client the store can run on: one Redis node or a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/** Number of KEYS of each script (checked against the file names when loading). */
export const SCRIPT_KEYS = {
  acquireLease: 7,
  renewLease: 3,
  releaseLease: 8,
  releaseAndAcquire: 15,
  addProxies: 2,
  removeProxies: 4,
  restoreProxies: 3,
  recordHealth: 5,
  listProxies: 1,
  poolStats: 5,
  setPolicy: 2,
  deletePolicy: 2,
  listPolicies: 2,
} as const;

/** The name of a script (its file name without `-<keys>.lua`). */
export type ScriptName = keyof typeof SCRIPT_KEYS;

/** A tuple of `N` key names. */
type Keys<N extends number, T extends string[] = []> = T["length"] extends N ? T : Keys<N, [...T, string]>;

/** The KEYS of script `S`, exactly as many as it declares. */
export type ScriptKeys<S extends ScriptName> = Keys<(typeof SCRIPT_KEYS)[S]>;

/** One ARGV entry. */
export type ScriptArg = string | number;

/** A loaded script: its source with includes resolved. */
export interface LoadedScript {
  readonly name: ScriptName;
  readonly numberOfKeys: number;
  readonly lua: string;
}

const LUA_DIR = new URL("./lua/", import.meta.url);
const INCLUDE_DIR = new URL("./lua/includes/", import.meta.url);
const FILE_NAME = /^([A-Za-z]+)-(\d+)\.lua$/;
const INCLUDE_LINE = /^--\s*@include\s+"([A-Za-z0-9_]+)"\s*$/gm;
/** Command names on the client: a prefix keeps them apart from ioredis' own methods. */
const COMMAND_PREFIX = "pb_";

let loaded: ReadonlyMap<ScriptName, LoadedScript> | undefined;

function isScriptName(name: string): name is ScriptName {
  return Object.hasOwn(SCRIPT_KEYS, name);
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

/** Every script of ./lua, loaded once per process. Throws when one is missing or misnamed. */
export function loadScripts(): ReadonlyMap<ScriptName, LoadedScript> {
  if (loaded !== undefined) return loaded;
  const scripts = new Map<ScriptName, LoadedScript>();
  for (const file of readdirSync(LUA_DIR)) {
    const m = FILE_NAME.exec(file);
    if (m === null) continue;
    const [, name = "", keys = ""] = m;
    if (!isScriptName(name)) throw new Error(`unexpected Lua script ${file}`);
    const numberOfKeys = Number(keys);
    if (numberOfKeys !== SCRIPT_KEYS[name]) throw new Error(`${file}: expected ${SCRIPT_KEYS[name]} keys`);
    const lua = resolveIncludes(readFileSync(new URL(file, LUA_DIR), "utf8"), new Set());
    scripts.set(name, { name, numberOfKeys, lua });
  }
  for (const name of Object.keys(SCRIPT_KEYS)) {
    if (!isScriptName(name) || !scripts.has(name)) throw new Error(`Lua script ${name} is missing`);
  }
  loaded = scripts;
  return scripts;
}

/** A script command as ioredis adds it to the client. */
type ScriptCommand = (...args: ScriptArg[]) => Promise<unknown>;

function isScriptCommand(value: unknown): value is ScriptCommand {
  return typeof value === "function";
}

const registered = new WeakSet<RedisClient>();

/** Register every script on `client` (once per client). */
export function registerScripts(client: RedisClient): void {
  if (registered.has(client)) return;
  for (const script of loadScripts().values()) {
    client.defineCommand(COMMAND_PREFIX + script.name, { lua: script.lua, numberOfKeys: script.numberOfKeys });
  }
  registered.add(client);
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

  constructor(
    private readonly client: RedisClient,
    private readonly readyTimeoutMs: number,
  ) {
    registerScripts(client);
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
  async run<S extends ScriptName>(
    name: S,
    keys: ScriptKeys<S> & readonly string[],
    args: readonly ScriptArg[],
  ): Promise<unknown> {
    const command: unknown = Reflect.get(this.client, COMMAND_PREFIX + name);
    if (!isScriptCommand(command)) throw new Error(`script ${name} is not registered`);
    const keyList: readonly string[] = keys;
    return this.call(() => command.apply(this.client, [...keyList, ...args]));
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
