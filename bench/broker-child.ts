import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** A broker running in its own process. */
export interface BrokerChild {
  /** `127.0.0.1:<port>` */
  readonly address: string;
  readonly pid: number;
  /** SIGTERM, wait for the exit (the CPU profile, if any, is written by then). */
  stop(): Promise<void>;
}

export interface BrokerChildOptions {
  readonly redisUrl: string;
  /** Write a V8 CPU profile (`--cpu-prof`) into this directory. */
  readonly cpuProfileDir?: string;
}

const ENTRY = fileURLToPath(new URL("./broker-process.ts", import.meta.url));
const START_TIMEOUT_MS = 30_000;

/** Start `bench/broker-process.ts` as a child process and wait until it serves. */
export async function startBrokerChild(opts: BrokerChildOptions): Promise<BrokerChild> {
  const profile = opts.cpuProfileDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", opts.cpuProfileDir];
  const child = spawn(process.execPath, [...profile, "--import", "tsx", ENTRY], {
    env: { ...process.env, BENCH_REDIS_URL: opts.redisUrl },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stderr.on("data", (chunk: Buffer) => {
    log = (log + chunk.toString("utf8")).slice(-4_000);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const killOnExit = (): void => {
    child.kill("SIGKILL");
  };
  process.once("exit", killOnExit);

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bench broker did not start within ${START_TIMEOUT_MS} ms\n${log}`)), START_TIMEOUT_MS);
    const lines = createInterface({ input: child.stdout });
    lines.once("line", (line) => {
      clearTimeout(timer);
      const parsed: unknown = JSON.parse(line);
      const p = typeof parsed === "object" && parsed !== null && "port" in parsed ? Number(parsed.port) : Number.NaN;
      if (Number.isInteger(p) && p > 0) resolve(p);
      else reject(new Error(`bench broker said: ${line}`));
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`bench broker exited (${child.exitCode ?? child.signalCode})\n${log}`));
    });
  });

  const pid = child.pid;
  if (pid === undefined) throw new Error("bench broker has no pid");
  return {
    address: `127.0.0.1:${port}`,
    pid,
    async stop(): Promise<void> {
      process.removeListener("exit", killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const force = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(force);
    },
  };
}
