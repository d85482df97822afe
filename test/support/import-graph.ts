/**
 * The broker's layers as its imports draw them: every file of src/ belongs to a layer (its folder
 * under src/, or the file's name for src/cli.ts and src/main.ts), the SDK is one layer (`sdk`),
 * and an edge goes from a layer to each other layer one of its files imports.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)/g;

/** Every .ts file under `dir`. */
function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(path);
    return e.name.endsWith(".ts") ? [path] : [];
  });
}

/** The layer of a file of `src/`. */
function layerOf(src: string, file: string): string {
  const parts = relative(src, file).split(sep);
  const first = parts[0] ?? "";
  return parts.length === 1 ? first.replace(/\.ts$/, "") : first;
}

/** The edges `from -> to` between the layers of `src/` (and `sdk`), sorted. */
export function layerEdges(root: string): string[] {
  const src = join(root, "src");
  const edges = new Set<string>();
  for (const file of tsFiles(src)) {
    const from = layerOf(src, file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2] ?? "";
      let to: string | undefined;
      if (spec.startsWith("@proxybroker/sdk")) to = "sdk";
      else if (spec.startsWith(".")) {
        const target = resolve(dirname(file), spec);
        if (target.startsWith(src + sep)) to = layerOf(src, target);
      }
      if (to !== undefined && to !== from) edges.add(`${from} -> ${to}`);
    }
  }
  return [...edges].sort();
}

/** The edges of the first mermaid flowchart in a Markdown text (node ids, `a --> b`), sorted. */
export function diagramEdges(markdown: string): string[] {
  const block = /```mermaid\n([\s\S]*?)```/.exec(markdown)?.[1] ?? "";
  const edges = new Set<string>();
  for (const line of block.split("\n")) {
    const m = /^\s*([A-Za-z_][\w]*)(?:\[[^\]]*\])?\s*-->\s*([A-Za-z_][\w]*)/.exec(line);
    if (m !== null) edges.add(`${m[1]} -> ${m[2]}`);
  }
  return [...edges].sort();
}
