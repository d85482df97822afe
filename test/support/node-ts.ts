/**
 * How tests, benchmarks and the crawl harness start a TypeScript entry point as its own Node
 * process: `node --conditions=@proxybroker/source --import tsx <file>`. The condition makes
 * `@proxybroker/sdk/...` resolve to the SDK's sources instead of its build output, and starting
 * `node` itself (not `npx tsx`, which adds a second process) keeps the child's pid its own, so
 * SIGKILL and SIGSTOP reach the program under test.
 */

/** The condition under which the SDK package exports its TypeScript sources. */
export const SOURCE_CONDITION = "@proxybroker/source";

/** argv for `process.execPath` that runs `file` (relative to the repository root, the cwd). */
export function tsEntryArgs(file: string, nodeArgs: readonly string[] = []): string[] {
  return [...nodeArgs, `--conditions=${SOURCE_CONDITION}`, "--import", "tsx", file];
}
