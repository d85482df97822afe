/**
 * The run's logs on disk: the workers' lease logs (one JSON-lines file per process) read back for
 * the checker, and the sites' request log written next to them for a post-mortem.
 */
import { createWriteStream } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { LeaseLine, SiteRequest } from "./records.js";

/** Every line of every `*.jsonl` lease log in `dir`; a line that does not parse is counted, not used. */
export async function readLeaseLogs(dir: string): Promise<{ readonly lines: LeaseLine[]; readonly unreadable: number }> {
  const lines: LeaseLine[] = [];
  let unreadable = 0;
  for (const name of (await readdir(dir)).filter((n) => n.endsWith(".jsonl")).sort()) {
    const text = await readFile(join(dir, name), "utf8");
    for (const raw of text.split("\n")) {
      if (raw === "") continue;
      try {
        const l = JSON.parse(raw) as LeaseLine;
        if (l.t === "grant" || l.t === "end" || l.t === "event") lines.push(l);
        else unreadable += 1;
      } catch {
        unreadable += 1;
      }
    }
  }
  return { lines, unreadable };
}

/** Write the sites' request log as JSON lines. */
export async function writeSiteLog(file: string, requests: readonly SiteRequest[]): Promise<void> {
  const out = createWriteStream(file);
  for (const r of requests) {
    if (!out.write(`${JSON.stringify(r)}\n`)) await new Promise<void>((res) => out.once("drain", () => res()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}
