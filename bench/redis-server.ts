import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "../test/helpers/free-port.js";

/** The benchmark's own throwaway redis-server (never the shared one on 6379). */
export interface BenchRedis {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** SIGTERM (no save), wait for the exit, remove the temp dir. Idempotent. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 10_000;

/** Start `redis-server` without persistence on a free loopback port, in a fresh temp dir. */
export async function startRedis(): Promise<BenchRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), "pb-bench-redis-"));
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
  const child = spawn("redis-server", [...args, "--daemonize", "no", "--dir", dir, "--logfile", ""], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const keep = (chunk: Buffer): void => {
    log = (log + chunk.toString("utf8")).slice(-4_000);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let failed: Error | undefined;
  child.once("error", (err) => {
    failed = err;
  });
  const killOnExit = (): void => {
    child.kill("SIGKILL");
  };
  process.once("exit", killOnExit);

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    process.removeListener("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const force = setTimeout(() => child.kill("SIGKILL"), 3_000);
      await exited;
      clearTimeout(force);
    }
    await rm(dir, { recursive: true, force: true });
  };

  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (failed !== undefined || child.exitCode !== null) {
      await stop();
      throw new Error(`redis-server did not start: ${failed?.message ?? `exit ${child.exitCode}`}\n${log}`);
    }
    if (await answersPing(url)) return { url, port, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server on port ${port} did not answer within ${START_TIMEOUT_MS} ms\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function answersPing(url: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on("error", () => undefined);
  try {
    await probe.connect();
    return (await probe.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}
