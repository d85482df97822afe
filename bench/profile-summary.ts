import { readFile, readdir, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/** Self time of one function or one package in a CPU profile. */
export interface ProfileEntry {
  readonly name: string;
  readonly selfMs: number;
  readonly percent: number;
}

/** The top self-time functions and the self time per package of a profile's window. */
export interface ProfileSummary {
  readonly file: string;
  /** Samples inside the measurement window (all samples when the clocks did not line up). */
  readonly samples: number;
  readonly windowed: boolean;
  readonly functions: readonly ProfileEntry[];
  readonly packages: readonly ProfileEntry[];
}

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const REPO = fileURLToPath(new URL("..", import.meta.url));

function isCpuProfile(v: unknown): v is CpuProfile {
  if (typeof v !== "object" || v === null) return false;
  return (
    "nodes" in v &&
    Array.isArray(v.nodes) &&
    "samples" in v &&
    Array.isArray(v.samples) &&
    "timeDeltas" in v &&
    Array.isArray(v.timeDeltas) &&
    "startTime" in v
  );
}

/**
 * The main thread's profile in `dir`. `--cpu-prof` writes one file per thread
 * (`CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`); with tsx the module loader runs on a
 * thread of its own, so take thread 0 (or, failing that, the largest file).
 */
export async function mainThreadProfile(dir: string): Promise<string | undefined> {
  const names = (await readdir(dir)).filter((n) => n.endsWith(".cpuprofile"));
  const main = names.find((n) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(n));
  if (main !== undefined) return join(dir, main);
  let best: { name: string; size: number } | undefined;
  for (const name of names) {
    const size = (await stat(join(dir, name))).size;
    if (best === undefined || size > best.size) best = { name, size };
  }
  return best === undefined ? undefined : join(dir, best.name);
}

/** A stretch of the monotonic clock, µs. */
export interface TimeRange {
  readonly startUs: number;
  readonly endUs: number;
}

/**
 * Summarise a V8 CPU profile over the given stretches of the monotonic clock (V8 and
 * `process.hrtime` read the same clock on Linux); falls back to every sample when none is inside.
 */
export async function summariseProfile(opts: { file: string; ranges: readonly TimeRange[]; top: number }): Promise<ProfileSummary> {
  const parsed: unknown = JSON.parse(await readFile(opts.file, "utf8"));
  if (!isCpuProfile(parsed)) throw new Error(`${opts.file} is not a V8 CPU profile`);
  const frames = new Map<number, CallFrame>(parsed.nodes.map((n) => [n.id, n.callFrame]));

  // Sample i is taken at startTime + Σ timeDeltas[0..i]; its self time lasts until the next one.
  const all: Array<{ frame: CallFrame; us: number }> = [];
  const inWindow: Array<{ frame: CallFrame; us: number }> = [];
  let at = parsed.startTime;
  for (let i = 0; i < parsed.samples.length; i++) {
    at += parsed.timeDeltas[i] ?? 0;
    const frame = frames.get(parsed.samples[i] ?? -1);
    if (frame === undefined) continue;
    const sample = { frame, us: Math.max(0, parsed.timeDeltas[i + 1] ?? 0) };
    all.push(sample);
    if (opts.ranges.some((r) => at >= r.startUs && at <= r.endUs)) inWindow.push(sample);
  }
  const windowed = inWindow.length > 0;
  const samples = windowed ? inWindow : all;

  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  let total = 0;
  for (const s of samples) {
    total += s.us;
    add(byFunction, functionKey(s.frame), s.us);
    add(byPackage, packageOf(s.frame), s.us);
  }
  const entries = (m: Map<string, number>, n: number): ProfileEntry[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({ name, selfMs: us / 1000, percent: total > 0 ? (100 * us) / total : 0 }));
  return {
    file: opts.file,
    samples: samples.length,
    windowed,
    functions: entries(byFunction, opts.top),
    packages: entries(byPackage, opts.top),
  };
}

function add(m: Map<string, number>, key: string, us: number): void {
  m.set(key, (m.get(key) ?? 0) + us);
}

function shortPath(url: string): string {
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  const nm = path.lastIndexOf("node_modules/");
  if (nm >= 0) return path.slice(nm + "node_modules/".length);
  return path.startsWith(REPO) ? relative(REPO, path) : path;
}

function functionKey(f: CallFrame): string {
  const name = f.functionName === "" ? "(anonymous)" : f.functionName;
  if (f.url === "") return name;
  return `${name}  ${shortPath(f.url)}:${f.lineNumber + 1}`;
}

/** The package (node_modules) or repo folder a frame belongs to; V8's pseudo-frames by name. */
function packageOf(f: CallFrame): string {
  if (f.url === "") return f.functionName === "" ? "(native)" : f.functionName;
  if (f.url.startsWith("node:")) return "node (internals)";
  const p = shortPath(f.url);
  if (f.url.includes("node_modules/")) {
    const parts = p.split("/");
    return p.startsWith("@") ? `${parts[0] ?? ""}/${parts[1] ?? ""}` : (parts[0] ?? p);
  }
  const parts = p.split("/");
  return parts.length > 2 ? `${parts[0] ?? ""}/${parts[1] ?? ""}` : p;
}
