/**
 * The `proxybroker` process: runs the command line (./cli/program.ts) with the process's own
 * output and environment, and exits with the command's code.
 */
import { EXIT } from "./cli/exit.js";
import { runCli } from "./cli/program.js";
import { log } from "./server/serve.js";

async function main(argv: readonly string[]): Promise<void> {
  // `proxybroker list --json | head`: a reader that stops reading ends the command quietly
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(EXIT.ok);
    throw err;
  });
  let code: number;
  try {
    code = await runCli(argv, { out: process.stdout, err: process.stderr, env: process.env });
  } catch (err) {
    log(`failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(EXIT.failed);
  }
  // a command that ended well lets the process end by itself (serve and gateway keep running)
  if (code !== EXIT.ok) process.exit(code);
}

void main(process.argv.slice(2));
