/** One `proxybroker` command line run in this process (`runCli`), with its own output streams and environment. */
import { Writable } from "node:stream";
import { runCli } from "../../src/cli/program.js";

export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A stream that keeps what is written to it. */
function collector(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream, text: () => chunks.join("") };
}

/** Run `args` as the CLI would, with `env` as its environment (none by default). */
export async function runCliHere(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  const out = collector();
  const err = collector();
  const code = await runCli(args, { out: out.stream, err: err.stream, env });
  return { code, stdout: out.text(), stderr: err.text() };
}

/** The last line of a command's output, parsed as JSON (`--json`). */
export function lastJson<T>(r: Ran): T {
  return JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "null") as T;
}
