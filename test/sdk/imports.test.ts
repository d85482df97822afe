/**
 * No import loops in the SDK's sources (`sdk/src`, the generated `gen/` aside), type-only imports
 * and re-exports included: each module can be read, and loaded, after what it imports.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SDK_SRC = resolve(import.meta.dirname, "../../sdk/src");

/** Every TypeScript file under `dir`, except generated code. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "gen" ? [] : sources(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** The SDK files `file` imports or re-exports from (relative specifiers; `import type` too). */
function importsOf(file: string, known: ReadonlySet<string>): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    const target = resolve(dirname(file), m[1]!.replace(/\.js$/, ".ts"));
    if (known.has(target)) out.push(target);
  }
  return out;
}

/** The import loops among `graph`'s files, each as the path that closes it. */
function loops(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const onPath: string[] = [];
  const visit = (file: string): void => {
    const at = onPath.indexOf(file);
    if (at >= 0) {
      found.push([...onPath.slice(at), file]);
      return;
    }
    if (done.has(file)) return;
    onPath.push(file);
    for (const next of graph.get(file) ?? []) visit(next);
    onPath.pop();
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return found;
}

describe("the SDK's module graph", () => {
  it("finds a loop when there is one (the check itself)", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
    ]);
    expect(loops(graph)).toEqual([["a", "b", "c", "a"]]);
    expect(
      loops(
        new Map([
          ["a", ["b"]],
          ["b", []],
        ]),
      ),
    ).toEqual([]);
  });

  it("has no import loop, type-only imports included", () => {
    const files = sources(SDK_SRC);
    const known = new Set(files);
    const graph = new Map(files.map((f) => [f, importsOf(f, known)]));
    // the scan sees the imports (a client module imports several others)
    expect(graph.get(join(SDK_SRC, "client/client.ts"))?.length).toBeGreaterThan(10);
    expect(loops(graph).map((path) => path.map((f) => relative(SDK_SRC, f)).join(" → "))).toEqual([]);
  });
});
