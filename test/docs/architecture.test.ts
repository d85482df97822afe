import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { diagramEdges, layerEdges } from "../support/import-graph.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Whether the edges `a -> b` form a loop. */
function hasLoop(edges: readonly string[]): boolean {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    const [a = "", b = ""] = e.split(" -> ");
    next.set(a, [...(next.get(a) ?? []), b]);
  }
  const done = new Set<string>();
  const visit = (node: string, path: Set<string>): boolean => {
    if (path.has(node)) return true;
    if (done.has(node)) return false;
    path.add(node);
    const loop = (next.get(node) ?? []).some((n) => visit(n, path));
    path.delete(node);
    done.add(node);
    return loop;
  };
  return [...next.keys()].some((n) => visit(n, new Set()));
}

describe("docs/architecture.md's diagram of the broker's layers", () => {
  it("draws exactly the arrows the imports of src/ make, and they form no loop", () => {
    const real = layerEdges(ROOT);
    const drawn = diagramEdges(readFileSync(`${ROOT}/docs/architecture.md`, "utf8"));
    expect(real.length).toBeGreaterThan(10);
    expect({ notDrawn: real.filter((e) => !drawn.includes(e)), notImported: drawn.filter((e) => !real.includes(e)) }).toEqual({
      notDrawn: [],
      notImported: [],
    });
    expect(hasLoop(real)).toBe(false);
  });

  it("finds a loop and a missing arrow when there is one", () => {
    expect(hasLoop(["a -> b", "b -> c", "c -> a"])).toBe(true);
    expect(hasLoop(["a -> b", "b -> c", "a -> c"])).toBe(false);
    expect(diagramEdges('```mermaid\nflowchart TD\n    a["A<br/>x"] --> b\n    b --> c\n```\n')).toEqual(["a -> b", "b -> c"]);
  });
});
