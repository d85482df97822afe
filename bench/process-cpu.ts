import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * CPU time (user + system, µs) used so far by another process, from /proc/<pid>/stat (Linux;
 * resolution one clock tick, 10 ms). NaN where /proc is not available.
 */
export function processCpuUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at field 3 (state).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return ((utime + stime) / clockTicks()) * 1e6;
  } catch {
    return Number.NaN;
  }
}

/** CPU time (user + system, µs) used so far by this process. */
export function ownCpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/**
 * CPU time (µs) that all processors have spent busy so far (user, nice, system, irq, softirq,
 * steal from the first line of /proc/stat). NaN where /proc is not available.
 */
export function machineBusyUs(): number {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const busy = (v[0] ?? 0) + (v[1] ?? 0) + (v[2] ?? 0) + (v[5] ?? 0) + (v[6] ?? 0) + (v[7] ?? 0);
    return (busy / clockTicks()) * 1e6;
  } catch {
    return Number.NaN;
  }
}
