/**
 * What the gateway bench reads of other processes: resident memory from /proc, the pid of a
 * child found by its command line, and Prometheus counters from a `/metrics` endpoint.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Resident set size of `pid` in bytes (VmRSS), NaN when it cannot be read. */
export function rssBytes(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? Number.NaN : Number(kb) * 1024;
  } catch {
    return Number.NaN;
  }
}

/**
 * The pids of the children of this process whose argv satisfies `matches` (Linux /proc).
 * `crawl/gateway-process.ts` and `test/support/tinyproxies.ts` do not hand out their children's
 * pids, so the bench finds them here.
 */
export function childPids(matches: (argv: readonly string[]) => boolean): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== process.pid) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8")
        .split("\0")
        .filter((a) => a !== "");
      if (matches(argv)) out.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

/** The samples of a Prometheus text exposition: `name{labels}` → value. */
export type Samples = ReadonlyMap<string, number>;

/** GET `http://address/metrics` and parse it. */
export async function scrape(address: string): Promise<Samples> {
  const text = await (await fetch(`http://${address}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const sep = line.lastIndexOf(" ");
    out.set(line.slice(0, sep), Number(line.slice(sep + 1)));
  }
  return out;
}

/** The sum of every sample of `name` (all label sets) whose labels contain each of `labels` (`k="v"`). */
export function total(samples: Samples, name: string, labels: readonly string[] = []): number {
  let sum = 0;
  for (const [key, value] of samples) {
    const brace = key.indexOf("{");
    const bare = brace < 0 ? key : key.slice(0, brace);
    if (bare !== name) continue;
    if (labels.every((l) => key.includes(l))) sum += value;
  }
  return sum;
}

/** `total` of `after` minus `total` of `before`. */
export function delta(before: Samples, after: Samples, name: string, labels: readonly string[] = []): number {
  return total(after, name, labels) - total(before, name, labels);
}
