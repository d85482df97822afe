/**
 * The gateway for the harness's "gateway" strategy: `proxybroker gateway` in a process of its
 * own, in front of the phase's broker, shared by every worker process (a sidecar per machine).
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { freePort } from "../test/support/free-port.js";
import { tsEntryArgs } from "../test/support/node-ts.js";

export interface GatewayProcess {
  /** `127.0.0.1:port` */
  readonly address: string;
  /** Its output so far (JSON log lines). */
  output(): string;
  /** Send `signal` to the process (a test of the shutdown). */
  signal(signal: NodeJS.Signals): void;
  /** Resolves when the process has exited. */
  exited(): Promise<void>;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 30_000;

/** Start a gateway for the broker at `brokerAddress`; resolves once it listens. */
export async function startGatewayProcess(brokerAddress: string): Promise<GatewayProcess> {
  const address = `127.0.0.1:${await freePort()}`;
  const child: ChildProcess = spawn(process.execPath, [...tsEntryArgs("src/cli.ts"), "gateway"], {
    env: {
      ...process.env,
      PROXYBROKER_ADDRESS: brokerAddress,
      GATEWAY_LISTEN_ADDRESS: address,
      // the harness's sites and proxies are on loopback
      GATEWAY_DENY_TARGETS: "none",
      // and the benches' HTTPS sites on any port
      GATEWAY_CONNECT_PORTS: "any",
      GATEWAY_WORKER_ID: "crawl-gateway",
      LOG_LEVEL: process.env["LOG_LEVEL"] ?? "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const killOnExit = (): void => void child.kill("SIGKILL");
  process.once("exit", killOnExit);
  let out = "";
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`gateway did not listen within ${START_TIMEOUT_MS} ms: ${out.slice(-500)}`)),
      START_TIMEOUT_MS,
    );
    const onData = (d: Buffer): void => {
      out = (out + d.toString()).slice(-1_000_000);
      if (out.includes("gateway listening on")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`gateway exited (${String(code)}): ${out.slice(-500)}`)));
  });
  await listening;
  return {
    address,
    output: () => out,
    signal: (signal) => void child.kill(signal),
    exited: () =>
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise((resolve) => child.once("exit", () => resolve())),
    stop: async () => {
      process.removeListener("exit", killOnExit);
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
