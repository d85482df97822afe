/**
 * Spawn worker processes (`crawl/workers/<entry>.ts <config JSON>` through `tsEntryArgs`, or another
 * `command`, e.g. a Python worker), collect their reports; several groups (languages) at once with
 * `runWorkerGroups`.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { tsEntryArgs } from "../test/support/node-ts.js";
import type { FetchReport, WorkerConfig } from "./workers/common.js";

export interface SpawnOptions {
  /** File name under crawl/workers without `.ts`. */
  readonly entry: string;
  /** Another program instead (e.g. a Python worker): argv before the config JSON. */
  readonly command?: readonly string[];
  readonly count: number;
  /** The config of worker i. */
  readonly config: (i: number) => WorkerConfig;
  /** SIGKILL a worker still running at this epoch ms. */
  readonly killAt: number;
}

export interface WorkerRun {
  readonly reports: FetchReport[];
  readonly failures: number;
}

export async function runWorkers(options: SpawnOptions): Promise<WorkerRun> {
  const reports: FetchReport[] = [];
  let failures = 0;
  const exits = Array.from({ length: options.count }, (_, i) => {
    const config = options.config(i);
    const [program, ...args] = options.command ?? [process.execPath, ...tsEntryArgs(`crawl/workers/${options.entry}.ts`)];
    const child = spawn(program ?? process.execPath, [...args, JSON.stringify(config)], { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => {
      err = (err + d.toString()).slice(-2000);
      if (process.env["CRAWL_DEBUG"] === "1") process.stderr.write(d);
    });
    createInterface({ input: child.stdout }).on("line", (line) => {
      try {
        reports.push(JSON.parse(line) as FetchReport);
      } catch {
        err += `${line}\n`;
      }
    });
    const killer = setTimeout(() => child.kill("SIGKILL"), Math.max(0, options.killAt - Date.now()));
    return new Promise<void>((resolve) => {
      child.once("exit", (code) => {
        clearTimeout(killer);
        if (code !== 0) {
          failures += 1;
          process.stderr.write(`worker ${config.workerId} exited ${String(code)}: ${err}\n`);
        }
        resolve();
      });
    });
  });
  await Promise.all(exits);
  return { reports, failures };
}

export interface GroupRun extends WorkerRun {
  readonly label: string;
  readonly count: number;
}

/** Several groups of workers at the same time (e.g. TypeScript and Python on one queue). */
export async function runWorkerGroups(
  groups: ReadonlyArray<SpawnOptions & { readonly label: string }>,
): Promise<{ readonly all: WorkerRun; readonly groups: readonly GroupRun[] }> {
  const runs = await Promise.all(
    groups.map(
      async (g): Promise<GroupRun> => ({
        label: g.label,
        count: g.count,
        ...(g.count > 0 ? await runWorkers(g) : { reports: [], failures: 0 }),
      }),
    ),
  );
  return { all: { reports: runs.flatMap((r) => r.reports), failures: runs.reduce((n, r) => n + r.failures, 0) }, groups: runs };
}
