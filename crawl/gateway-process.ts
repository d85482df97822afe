/**
 * The gateway for the harness's "gateway" strategy: `proxybroker gateway` in a process of its
 * own, in front of the phase's broker, shared by every worker process (a sidecar per machine).
 * With `intercept` it ends the workers' TLS (interception mode); without, CONNECT tunnels are
 * relayed as they are (tunnel mode).
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

/** TLS interception: the CA the gateway signs the hosts' certificates with, and the CA it trusts for the sites. */
export interface InterceptFiles {
  /** PEM files: the CA's certificate and RSA key (GATEWAY_CA_CERT_FILE, GATEWAY_CA_KEY_FILE). */
  readonly caCertFile: string;
  readonly caKeyFile: string;
  /** PEM file: more CAs to trust for the sites (GATEWAY_UPSTREAM_CA_FILE). */
  readonly upstreamCaFile: string;
}

export interface GatewayProcessOptions {
  /** Interception mode; unset: tunnel mode (no CA, whatever the environment says). */
  readonly intercept?: InterceptFiles;
  /** Node's own flags for the process (`--cpu-prof`, …), before the entry point. */
  readonly nodeArgs?: readonly string[];
  /** Run the compiled command (`dist/src/cli.js`, what the installed package runs; `npm run build` first) instead of the sources. */
  readonly built?: boolean;
  /** Listen here (`127.0.0.1:port`: a gateway started again on its old address); default: a free port. */
  readonly address?: string;
}

const START_TIMEOUT_MS = 30_000;

/** Start a gateway for the broker at `brokerAddress`; resolves once it listens. */
export async function startGatewayProcess(brokerAddress: string, options: GatewayProcessOptions = {}): Promise<GatewayProcess> {
  const address = options.address ?? `127.0.0.1:${await freePort()}`;
  const { intercept, nodeArgs = [] } = options;
  const entry = options.built === true ? [...nodeArgs, "dist/src/cli.js"] : tsEntryArgs("src/cli.ts", nodeArgs);
  const child: ChildProcess = spawn(process.execPath, [...entry, "gateway"], {
    env: {
      ...process.env,
      PROXYBROKER_ADDRESS: brokerAddress,
      GATEWAY_LISTEN_ADDRESS: address,
      // the harness's sites and proxies are on loopback
      GATEWAY_DENY_TARGETS: "none",
      // and the benches' HTTPS sites on any port
      GATEWAY_CONNECT_PORTS: "any",
      // empty: unset (tunnel mode)
      GATEWAY_CA_CERT_FILE: intercept?.caCertFile ?? "",
      GATEWAY_CA_KEY_FILE: intercept?.caKeyFile ?? "",
      GATEWAY_UPSTREAM_CA_FILE: intercept?.upstreamCaFile ?? "",
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
