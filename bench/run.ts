/**
 * `npm run bench`: ProxyBroker against seed 000's algorithm, on one fresh local redis-server,
 * with the broker in its own process. Prints a table, the ratios and the targets, and writes
 * `.bench/last.json`. Settings: bench/config.ts (BENCH_SECONDS, BENCH_PROFILE=1, …).
 */
import { mkdir } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { loadBenchConfig } from "./config.js";
import { profiledScenario, plan } from "./plan.js";
import type { PlannedScenario } from "./plan.js";
import { mainThreadProfile, summariseProfile } from "./profile-summary.js";
import type { ProfileSummary } from "./profile-summary.js";
import { startRedisServer } from "../test/support/redis-server.js";
import { commandLines, errorLine, noiseLine, profileLines, ratioLines, resultsTable, targetLines, writeJson } from "./report.js";
import { NOISY_CORES, usedSlices } from "./result.js";
import type { ScenarioResult } from "./result.js";
import { runBrokerScenario, runSeedScenario } from "./scenarios.js";
import type { BenchContext } from "./scenarios.js";
import { ratios, targets } from "./targets.js";
import { startClusterTarget, type ClusterTarget } from "./cluster-target.js";
import { measureWake, type WakeResult } from "./wake-latency.js";
import { recordsLine } from "../crawl/records-line.js";

/** Release → grant round trips of the wake-up measurement. */
const WAKE_ROUNDS = 200;

const OUT_DIR = fileURLToPath(new URL("../.bench/", import.meta.url));

/** What this run wrote, printed at its end. */
const written: string[] = [];

function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

async function runOne(ctx: BenchContext, sc: PlannedScenario): Promise<ScenarioResult> {
  return sc.system === "seed000" ? runSeedScenario(ctx, sc) : (await runBrokerScenario(ctx, sc)).result;
}

async function profile(
  ctx: BenchContext,
  dir: string,
  sc: ReturnType<typeof profiledScenario>,
): Promise<{ result: ScenarioResult; summary: ProfileSummary }> {
  await mkdir(dir, { recursive: true });
  const run = await runBrokerScenario(ctx, sc);
  const file = await mainThreadProfile(dir);
  if (file === undefined) throw new Error(`no .cpuprofile written into ${dir}`);
  const summary = await summariseProfile({ file, ranges: usedSlices(run.slices), top: 20 });
  return { result: run.result, summary };
}

async function main(): Promise<void> {
  const config = loadBenchConfig();
  const scenarios = plan(config);
  const startedAt = new Date();
  say(
    `bench: ${scenarios.length} scenarios × (${config.warmupSeconds} s warm-up + ${config.seconds} s)${config.profile ? " + 1 profiled" : ""}`,
  );
  const redis = await startRedisServer();
  const stats = new Redis(redis.url);
  let cluster: Promise<ClusterTarget> | undefined;
  const ctx: BenchContext = {
    redisUrl: redis.url,
    stats,
    cluster: () => (cluster ??= startClusterTarget()),
    warmupSeconds: config.warmupSeconds,
    seconds: config.seconds,
    sliceSeconds: config.sliceSeconds,
    retryPauseMs: config.retryPauseMs,
  };
  const results: ScenarioResult[] = [];
  let profiled: { result: ScenarioResult; summary: ProfileSummary } | undefined;
  const wakes: WakeResult[] = [];
  try {
    say(`bench: redis-server ${redis.url}`);
    for (const sc of scenarios) {
      const t = Date.now();
      const r = await runOne(ctx, sc);
      results.push(r);
      say(`bench: ${r.label.replace(/\s+/g, " ")}: ${r.cyclesPerSec.toFixed(0)} cycles/s (${((Date.now() - t) / 1000).toFixed(1)} s)`);
    }
    if (config.only.length === 0 || config.only.includes("wake")) {
      const single = { env: { REDIS_URL: redis.url }, servers: [stats], flush: async () => void (await stats.flushall()) };
      wakes.push(await measureWake(single, "2 brokers, one Redis", WAKE_ROUNDS));
      wakes.push(await measureWake(await ctx.cluster(), "2 brokers, 3-master cluster", WAKE_ROUNDS));
      for (const w of wakes) say(`bench: wake-up ${w.label}: p50 ${w.p50Ms.toFixed(1)} ms, p99 ${w.p99Ms.toFixed(1)} ms`);
    }
    if (config.profile) {
      const dir = `${OUT_DIR}profiles/${startedAt.toISOString().replace(/[:.]/g, "-")}`;
      written.push(`${dir}/ (broker CPU profiles)`);
      profiled = await profile(ctx, dir, profiledScenario(config, dir));
      say(`bench: profiled run: ${profiled.result.cyclesPerSec.toFixed(0)} cycles/s`);
    }
  } finally {
    stats.disconnect();
    await redis.stop();
    if (cluster !== undefined) await (await cluster).stop();
  }

  const ratioList = ratios(results);
  const targetList = targets(results);
  const shown = profiled === undefined ? results : [...results, profiled.result];
  const out: string[] = [
    "",
    `ProxyBroker benchmark — ${startedAt.toISOString()}, ${cpus().length} CPUs, Node ${process.version}; ${config.warmupSeconds} s warm-up + ${config.seconds} s per scenario` +
      `; leases held ${config.holdMs} ms (steady, scale) and ${config.contentionHoldMs} ms (contention)`,
    "P proxies, W concurrent loops, D domains; a cycle = acquire → release(SUCCESS); latency = asking → grant, retries included.",
    "redis cmds/cyc counts every command Redis ran, those inside Lua scripts too (Redis 7 commandstats);",
    "evalsha/cyc counts script calls (the broker's round trips). CPU columns: user + system time of each process;",
    "others' cores: CPU used meanwhile by other processes on this machine (they share the cores). Each window is measured",
    `in ${config.sliceSeconds} s slices; a row uses its slices where others used < ${NOISY_CORES} cores (at least the quieter half): "slices" used/all.`,
    "",
    resultsTable(shown),
    ...[noiseLine(shown), errorLine(shown)].filter((l) => l !== ""),
    "",
    "Redis commands per cycle (calls per cycle × Redis µs per call; EVALSHA's µs include its commands):",
    commandLines(shown),
    "",
    "Ratios:",
    ratioLines(ratioList),
    "",
    "Targets:",
    targetLines(targetList),
  ];
  if (wakes.length > 0) {
    out.push(
      "",
      `Cross-replica wake-up (a release through one broker → the grant of an acquire waiting on the other; WAIT_POLL_MS 10 s, ${WAKE_ROUNDS} rounds):`,
    );
    for (const w of wakes)
      out.push(`  ${w.label}: p50 ${w.p50Ms.toFixed(1)} ms, p99 ${w.p99Ms.toFixed(1)} ms, max ${w.maxMs.toFixed(1)} ms`);
  }
  if (profiled !== undefined) out.push("", "Broker CPU profile (steady, release-and-next):", profileLines(profiled.summary));
  process.stdout.write(`${out.join("\n")}\n`);

  await writeJson(`${OUT_DIR}last.json`, {
    startedAt: startedAt.toISOString(),
    machine: { cpus: cpus().length, node: process.version, loadavgAtEnd: loadavg() },
    config,
    results,
    ratios: ratioList,
    targets: targetList,
    wakes,
    ...(profiled !== undefined ? { profiled: { result: profiled.result, summary: profiled.summary } } : {}),
  });
  written.push(`${OUT_DIR}last.json`);
}

// Ctrl-C: exit through the 'exit' handlers, which kill redis-server and the broker.
process.on("SIGINT", () => process.exit(130));
const recordsWritten = (): void => void process.stdout.write(`${recordsLine("bench", written)}\n`);
main().then(recordsWritten, (err: unknown) => {
  say(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  recordsWritten();
  process.exit(1);
});
