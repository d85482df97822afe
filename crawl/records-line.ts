/**
 * The last thing a long harness command prints: the files (or directories of files) where its
 * records went, or that it wrote none. `paths` are printed as given: make them absolute.
 */
export function recordsLine(harness: string, paths: readonly string[], hint = ""): string {
  if (paths.length === 0) return `${harness}: wrote no records${hint === "" ? "" : ` (${hint})`}`;
  return [`${harness}: records written to`, ...paths.map((p) => `  ${p}`)].join("\n");
}
