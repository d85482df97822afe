import type { Redis } from "ioredis";

/** One reading of `INFO commandstats` and `INFO cpu`. */
export interface RedisSample {
  /** Calls and µs spent per command name (lowercase, e.g. "evalsha"), the benchmark's own INFO left out. */
  readonly calls: ReadonlyMap<string, { readonly calls: number; readonly usec: number }>;
  /** used_cpu_sys + used_cpu_user, in µs. */
  readonly cpuUs: number;
  /** The same, per server (in the order given). */
  readonly cpuUsEach: readonly number[];
}

/** What Redis did between two samples. */
export interface RedisDelta {
  readonly calls: number;
  readonly evalsha: number;
  readonly cpuUs: number;
  /** The CPU of the busiest server (a cluster's busiest master), µs. */
  readonly busiestCpuUs: number;
  /** Per command name, most calls first. `usec` is Redis's own time in the command (for EVALSHA,
   *  with the commands the script runs, which commandstats also counts as calls of their own). */
  readonly byCommand: ReadonlyArray<CommandDelta>;
}

export interface CommandDelta {
  readonly name: string;
  readonly calls: number;
  readonly usec: number;
}

/** Commands the measuring itself sends, left out of the counts. */
const OWN_COMMANDS = new Set(["info"]);

/** Read the counters now (one INFO call on each given, non-benchmark connection), summed over them. */
export async function sampleRedis(servers: readonly Redis[]): Promise<RedisSample> {
  const texts = await Promise.all(servers.map((r) => r.info("commandstats", "cpu")));
  const calls = new Map<string, { calls: number; usec: number }>();
  let cpuSec = 0;
  const cpuUsEach = texts.map((text) => {
    let sec = 0;
    for (const m of text.matchAll(/^used_cpu_(?:sys|user):([\d.]+)\r?$/gm)) sec += Number(m[1]);
    return sec * 1e6;
  });
  for (const line of texts.join("\r\n").split("\r\n")) {
    const cmd = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (cmd !== null) {
      const name = (cmd[1] ?? "").toLowerCase();
      const was = calls.get(name) ?? { calls: 0, usec: 0 };
      if (!OWN_COMMANDS.has(name)) calls.set(name, { calls: was.calls + Number(cmd[2]), usec: was.usec + Number(cmd[3]) });
      continue;
    }
    const cpu = /^used_cpu_(sys|user):([\d.]+)$/.exec(line);
    if (cpu !== null) cpuSec += Number(cpu[2]);
  }
  return { calls, cpuUs: cpuSec * 1e6, cpuUsEach };
}

/** The difference `after − before`. */
export function redisDelta(before: RedisSample, after: RedisSample): RedisDelta {
  const byCommand: CommandDelta[] = [];
  let calls = 0;
  for (const [name, now] of after.calls) {
    const was = before.calls.get(name);
    const d = now.calls - (was?.calls ?? 0);
    if (d <= 0) continue;
    byCommand.push({ name, calls: d, usec: now.usec - (was?.usec ?? 0) });
    calls += d;
  }
  byCommand.sort((a, b) => b.calls - a.calls);
  const evalsha = byCommand.find((c) => c.name === "evalsha")?.calls ?? 0;
  const busiestCpuUs = Math.max(0, ...after.cpuUsEach.map((us, i) => us - (before.cpuUsEach[i] ?? 0)));
  return { calls, evalsha, cpuUs: after.cpuUs - before.cpuUs, busiestCpuUs, byCommand };
}
