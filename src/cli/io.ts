import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Where a `proxybroker` command writes and what environment it reads: the process's own, or a
 * caller's (runCli in a test runs commands in-process and reads what they wrote).
 */
export interface CliIO {
  /** Standard output: tables, JSON lines. */
  readonly out: NodeJS.WritableStream;
  /** Standard error: progress bars, messages. */
  readonly err: NodeJS.WritableStream;
  readonly env: NodeJS.ProcessEnv;
}

const PROCESS_IO: CliIO = { out: process.stdout, err: process.stderr, env: process.env };
const current = new AsyncLocalStorage<CliIO>();

/** Run `fn` with every command's output and environment taken from `io`. */
export function withIO<T>(io: CliIO, fn: () => Promise<T>): Promise<T> {
  // The process's own IO needs no context. Entering one turns async hooks on for the rest of the
  // process: every promise and socket of a long-running `serve` or `gateway` would pay for them
  // (a measurable share of the CPU of each of their requests).
  if (io.out === PROCESS_IO.out && io.err === PROCESS_IO.err && io.env === PROCESS_IO.env) return fn();
  return current.run(io, fn);
}

/** The IO of the command running now (the process's outside runCli). */
export function cliIO(): CliIO {
  return current.getStore() ?? PROCESS_IO;
}
