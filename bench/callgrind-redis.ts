/**
 * A redis-server under valgrind's callgrind (instruction counts, not seconds: the same loop gives
 * the same count whatever else the machine is doing), with its counters zeroed and dumped around
 * a measured stretch of work.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "../test/support/free-port.js";
import { findOnPath } from "../test/support/redis-server.js";

/** A running redis-server under callgrind. */
export interface CallgrindRedis {
  readonly url: string;
  /** Instructions redis-server executed while `work` ran. */
  count(work: () => Promise<void>): Promise<number>;
  /** The callgrind dumps copied into BENCH_IR_KEEP so far (none without it). */
  readonly kept: readonly string[];
  stop(): Promise<void>;
}

/** Start one; rejects with what to install when valgrind or redis-server is missing. */
export async function startCallgrindRedis(): Promise<CallgrindRedis> {
  for (const cmd of ["valgrind", "callgrind_control", "redis-server"]) {
    if (findOnPath(cmd) === undefined) throw new Error(`${cmd} is not on PATH (Debian: apt-get install -y valgrind redis-server)`);
  }
  const dir = mkdtempSync(join(tmpdir(), "pb-callgrind-"));
  const port = await freePort();
  const child: ChildProcess = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      `--callgrind-out-file=${join(dir, "cg.out")}`,
      "redis-server",
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      dir,
    ],
    { stdio: "ignore" },
  );
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on("error", () => undefined); // refused while valgrind starts: retried below
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch {
      probe.disconnect();
      if (Date.now() > deadline) throw new Error("redis-server under callgrind did not answer within 60 s");
      await new Promise((r) => setTimeout(r, 300));
    }
  }
  probe.disconnect();
  const pid = String(child.pid);
  let dumps = 0;
  const kept: string[] = [];
  return {
    url,
    kept,
    async count(work) {
      execFileSync("callgrind_control", ["-z", pid], { stdio: "ignore" });
      await work();
      execFileSync("callgrind_control", ["-d", pid], { stdio: "ignore" });
      dumps++;
      const file = join(dir, `cg.out.${dumps}`);
      const keep = process.env["BENCH_IR_KEEP"];
      if (keep !== undefined && keep !== "") {
        mkdirSync(keep, { recursive: true });
        copyFileSync(file, join(keep, `callgrind.out.${dumps}`));
        kept.push(resolve(keep, `callgrind.out.${dumps}`));
      }
      const summary = /^summary:\s+(\d+)/m.exec(readFileSync(file, "utf8"));
      if (summary === null) throw new Error(`${file} has no summary line`);
      return Number(summary[1]);
    },
    async stop() {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
