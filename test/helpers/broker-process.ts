/**
 * Test helper: the broker as a real child process (`node --import tsx src/main.ts`, so its pid is
 * the broker's own and SIGKILL really kills it), on a fixed free port so it can be restarted at
 * the same address.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { freePort } from "./free-port.js";

export interface BrokerProcess {
  readonly address: string;
  /** Start (again) and wait until it listens. */
  start(): Promise<void>;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
  output(): string;
}

export { freePort } from "./free-port.js";

/** A broker process on Redis (`redisUrl`) or the embedded store (""), with extra env. */
export async function brokerProcess(opts: { redisUrl: string; env?: Record<string, string> }): Promise<BrokerProcess> {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  let proc: ChildProcess | undefined;
  let out = "";
  const exited = (p: ChildProcess) => new Promise<void>((resolve) => (p.exitCode !== null || p.signalCode !== null ? resolve() : p.once("exit", () => resolve())));
  const halt = async (signal: NodeJS.Signals) => {
    const p = proc;
    proc = undefined;
    if (p === undefined) return;
    p.kill(signal);
    await exited(p);
  };
  return {
    address,
    output: () => out,
    async start() {
      if (proc !== undefined) return;
      const p = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
        env: { ...process.env, LISTEN_ADDRESS: address, REDIS_URL: opts.redisUrl, LEASE_TTL_MIN_MS: "50", WAIT_POLL_MS: "50", ...opts.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      proc = p;
      const from = out.length;
      const listening = new Promise<void>((resolve, reject) => {
        const onData = (d: Buffer) => {
          out += d.toString();
          if (out.slice(from).includes(`listening on ${address}`)) resolve();
        };
        p.stderr?.on("data", onData);
        p.stdout?.on("data", onData);
        p.once("exit", (code) => reject(new Error(`broker exited (${String(code)}): ${out.slice(-500)}`)));
      });
      await listening;
    },
    kill: () => halt("SIGKILL"),
    stop: () => halt("SIGTERM"),
  };
}
