/**
 * The scripts' arguments and keys by name (script-args.ts, script-keys.ts): the store puts each
 * value where the loader bakes its name's position into the scripts, and no script reads an
 * argument or a key by a number.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { argc, argPlaceholder, argv, SCRIPT_ARGS, type ArgList, type ArgValues } from "../../../../src/store/redis/script-args.js";
import { SCRIPT_KEY_LISTS, keyv, type KeyList, type KeyValues } from "../../../../src/store/redis/script-keys.js";
import { ACQUIRE_FIELDS } from "../../../../src/store/redis/acquire-fields.js";
import { bakeArgs, loadScripts, SCRIPT_KEYS, type FixedScriptName } from "../../../../src/store/redis/scripts.js";

const LUA_DIR = new URL("../../../../src/store/redis/lua/", import.meta.url);

/** Every Lua source file: the scripts and their includes. */
function luaSources(): { file: string; text: string }[] {
  const read = (dir: URL, prefix: string) =>
    readdirSync(dir)
      .filter((f) => f.endsWith(".lua"))
      .map((f) => ({ file: prefix + f, text: readFileSync(new URL(f, dir), "utf8") }));
  return [...read(LUA_DIR, ""), ...read(new URL("includes/", LUA_DIR), "includes/")];
}

/** The Lua code of `text` without its comments. */
function code(text: string): string {
  return text.replace(/--\[\[[\s\S]*?\]\]/g, "").replace(/--.*$/gm, "");
}

const LISTS = Object.keys(SCRIPT_ARGS) as ArgList[];
const KEY_LISTS = Object.keys(SCRIPT_KEY_LISTS) as KeyList[];

/** The key lists of each script with a fixed number of keys, in the order its KEYS takes them. */
const KEYS_OF: Readonly<Record<FixedScriptName, readonly KeyList[]>> = {
  acquireLease: ["acquireKeys"],
  renewLease: ["renewKeys"],
  releaseLease: ["releaseKeys"],
  releaseAndAcquire: ["acquireKeys", "releaseKeys"],
  reportOutcomes: ["reportOutcomesKeys"],
  addProxies: ["addProxiesKeys"],
  removeProxies: ["removeProxiesKeys"],
  restoreProxies: ["restoreProxiesKeys"],
  recordHealth: ["recordHealthKeys"],
  listProxies: ["listProxiesKeys"],
  poolStats: ["poolStatsKeys"],
  setPolicy: ["setPolicyKeys"],
  deletePolicy: ["deletePolicyKeys"],
  listPolicies: ["listPoliciesKeys"],
  domainPacing: ["domainPacingKeys"],
  ensureEpoch: ["ensureEpochKeys"],
  holdState: ["holdStateKeys"],
  domainUses: ["domainUsesKeys"],
  rememberDomainUses: ["rememberDomainUsesKeys"],
  touchWorker: ["touchWorkerKeys"],
  reserve: ["reserveKeys"],
  proxyAction: ["proxyActionKeys"],
  campaign: ["campaignKeys"],
  raisePacing: ["raisePacingKeys"],
  shardLayout: ["shardLayoutKeys"],
  rememberWorkers: ["rememberWorkersKeys"],
  hearWorker: ["hearWorkerKeys"],
};

describe("script arguments by name", () => {
  it("argv puts every argument at the position that the loader bakes for its name", () => {
    for (const list of LISTS) {
      const names: readonly string[] = SCRIPT_ARGS[list];
      const values = Object.fromEntries(names.map((n) => [n, `<${n}>`])) as unknown as ArgValues<typeof list>;
      const args = argv(list, values);
      expect(args).toHaveLength(argc(list));
      expect(argPlaceholder(`argc.${list}`)).toBe(args.length);
      for (const name of names) expect(args[(argPlaceholder(`${list}.${name}`) ?? 0) - 1]).toBe(`<${name}>`);
    }
  });

  it("every argument of an acquire but its draw (hex, seed) carries a field of the request", () => {
    const placed = new Set<string>(Object.values(ACQUIRE_FIELDS).flat());
    expect(SCRIPT_ARGS.acquire.filter((name) => !placed.has(name))).toEqual(["hex", "seed"]);
  });

  it("keyv puts every key at the position that the loader bakes for its name", () => {
    for (const list of KEY_LISTS) {
      const names: readonly string[] = SCRIPT_KEY_LISTS[list];
      const values = Object.fromEntries(names.map((n) => [n, `<${n}>`])) as unknown as KeyValues<typeof list>;
      const keys: readonly string[] = keyv(list, values);
      expect(keys).toHaveLength(names.length);
      expect(bakeArgs(`{{argc.${list}}}`)).toBe(String(names.length));
      for (const name of names) expect(keys[Number(bakeArgs(`{{${list}.${name}}}`)) - 1]).toBe(`<${name}>`);
    }
  });

  it("a script's number of keys is the length of its key lists", () => {
    for (const [script, lists] of Object.entries(KEYS_OF)) {
      const n = lists.reduce((sum, list) => sum + SCRIPT_KEY_LISTS[list].length, 0);
      expect({ script, n }).toEqual({ script, n: SCRIPT_KEYS[script as FixedScriptName] });
    }
    expect(Object.keys(KEYS_OF).sort()).toEqual(Object.keys(SCRIPT_KEYS).sort());
  });

  it("names every argument and key of a list once, no list twice, and no list argc", () => {
    for (const list of LISTS) expect(new Set(SCRIPT_ARGS[list]).size).toBe(SCRIPT_ARGS[list].length);
    for (const list of KEY_LISTS) expect(new Set(SCRIPT_KEY_LISTS[list]).size).toBe(SCRIPT_KEY_LISTS[list].length);
    expect(new Set([...LISTS, ...KEY_LISTS]).size).toBe(LISTS.length + KEY_LISTS.length);
    expect([...LISTS, ...KEY_LISTS]).not.toContain("argc");
  });

  it("bakes a position from the list as it stands: a list reordered moves the script's read with it", () => {
    const lua = "local b = A[{{l.b}}]\nlocal n = {{argc.l}}\nlocal c = {{minScore}}";
    expect(bakeArgs(lua, { l: ["a", "b", "c"] })).toBe("local b = A[2]\nlocal n = 3\nlocal c = {{minScore}}");
    expect(bakeArgs(lua, { l: ["b", "a", "c"] })).toBe("local b = A[1]\nlocal n = 3\nlocal c = {{minScore}}");
  });

  it("refuses an argument its list lacks, and an argc of no list", () => {
    expect(() => bakeArgs("A[{{acquire.ttl}}]")).toThrow(/list acquire has no ttl/);
    expect(() => bakeArgs("{{argc.nope}}")).toThrow(/no argument list nope/);
  });

  it("every script loads with its arguments baked in, none left by name", () => {
    const scripts = loadScripts();
    expect(scripts.size).toBeGreaterThan(20);
    for (const s of scripts.values()) expect(s.lua).not.toMatch(/\{\{(argc|[A-Za-z]+)\.[A-Za-z]+\}\}/);
  });

  it("no script reads ARGV or KEYS (or the acquire's A and K) at a position written as a number", () => {
    const found: string[] = [];
    for (const { file, text } of luaSources()) {
      for (const m of code(text).matchAll(/\b(?:ARGV|KEYS|A|K)\[([^\]]*)\]/g)) {
        // a position by name, or the first ones after a whole list ({{argc.list}} + n), is fine
        const rest = (m[1] ?? "").replace(/\{\{argc\.\w+\}\}(\s*\+\s*\{\{argc\.\w+\}\})*\s*\+\s*\d+/g, "").replace(/\{\{[\w.]+\}\}/g, "");
        if (/\d/.test(rest)) found.push(`${file}: ${m[0]}`);
      }
    }
    expect(found).toEqual([]);
  });

  it("every list is used by a script", () => {
    const used = new Set<string>();
    for (const { text } of luaSources()) for (const m of text.matchAll(/\{\{(?:argc\.)?([A-Za-z]+)[.}]/g)) used.add(m[1] ?? "");
    for (const list of [...LISTS, ...KEY_LISTS]) expect(used).toContain(list);
  });
});
