/**
 * The broker as a real child process (`src/main.ts`, started with `tsEntryArgs` so its pid is the
 * broker's own and SIGKILL really kills it), on a fixed free port so it can be restarted at the
 * same address. Used by tests, benchmarks and the crawl harness.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { freePort } from "./free-port.js";
import { tsEntryArgs } from "./node-ts.js";

export interface BrokerProcess {
  /** `127.0.0.1:<port>` */
  readonly address: string;
  /** The running process's pid (undefined while stopped). */
  pid(): number | undefined;
  /** Whether it was started and has not exited since (on its own or stopped). */
  alive(): boolean;
  /** Start (again) and wait until it listens. */
  start(): Promise<void>;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (drain) and wait for the exit. */
  stop(): Promise<void>;
  /** Everything it printed so far. */
  output(): string;
}

export interface BrokerProcessOptions {
  /** Redis URL, or "" for the embedded store. */
  readonly redisUrl: string;
  /** Extra environment (settings). */
  readonly env?: Readonly<Record<string, string>>;
  /** Node flags before the entry, e.g. `--cpu-prof`. */
  readonly nodeArgs?: readonly string[];
  /**
   * Test-friendly settings (LEASE_TTL_MIN_MS 50, WAIT_POLL_MS 50) unless false: a benchmark runs
   * the production defaults.
   */
  readonly testDefaults?: boolean;
}

const TEST_DEFAULTS: Readonly<Record<string, string>> = { LEASE_TTL_MIN_MS: "50", WAIT_POLL_MS: "50" };
/** The broker's output kept (its tail): a crawl at LOG_LEVEL=debug writes about 1 MB in all. */
const OUTPUT_KEPT_CHARS = 4_000_000;
const START_TIMEOUT_MS = 30_000;

export { freePort } from "./free-port.js";

/** A broker process on Redis or the embedded store; not started until `start()`. */
export async function brokerProcess(opts: BrokerProcessOptions): Promise<BrokerProcess> {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const defaults = opts.testDefaults === false ? {} : TEST_DEFAULTS;
  let proc: ChildProcess | undefined;
  let out = "";
  const exited = (p: ChildProcess): Promise<void> =>
    new Promise<void>((resolve) => (p.exitCode !== null || p.signalCode !== null ? resolve() : p.once("exit", () => resolve())));
  const killOnExit = (): void => {
    proc?.kill("SIGKILL");
  };
  const halt = async (signal: NodeJS.Signals): Promise<void> => {
    const p = proc;
    proc = undefined;
    if (p === undefined) return;
    process.removeListener("exit", killOnExit);
    p.kill(signal);
    const force = signal === "SIGKILL" ? undefined : setTimeout(() => p.kill("SIGKILL"), START_TIMEOUT_MS);
    await exited(p);
    if (force !== undefined) clearTimeout(force);
  };
  return {
    address,
    pid: () => proc?.pid,
    alive: () => proc !== undefined && proc.exitCode === null && proc.signalCode === null,
    output: () => out,
    async start() {
      if (proc !== undefined) return;
      const p = spawn(process.execPath, tsEntryArgs("src/main.ts", opts.nodeArgs), {
        env: { ...process.env, LISTEN_ADDRESS: address, REDIS_URL: opts.redisUrl, ...defaults, ...opts.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      proc = p;
      process.once("exit", killOnExit);
      let fresh = "";
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`broker did not listen within ${START_TIMEOUT_MS} ms: ${out.slice(-500)}`)),
          START_TIMEOUT_MS,
        );
        const onData = (d: Buffer): void => {
          const text = d.toString();
          out = (out + text).slice(-OUTPUT_KEPT_CHARS);
          fresh = (fresh + text).slice(-4_000);
          if (fresh.includes(`listening on ${address}`)) {
            clearTimeout(timer);
            resolve();
          }
        };
        p.stderr?.on("data", onData);
        p.stdout?.on("data", onData);
        p.once("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`broker exited (${String(code)}): ${out.slice(-500)}`));
        });
      });
    },
    kill: () => halt("SIGKILL"),
    stop: () => halt("SIGTERM"),
  };
}
