/**
 * The `proxybroker` command: `serve` runs the broker (what `npm start` runs); every setting is an
 * environment variable (README "Settings"). `--help` lists the commands, `--version` prints the
 * version. Exit codes: 0 done, 1 failed, 2 refused (a bad setting or argument).
 */
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { log, serve } from "./serve.js";

/** The package's version: its package.json is one level up from src/, two from dist/src/. */
function packageVersion(): string {
  for (const rel of ["../package.json", "../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "proxybroker" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // not there: the other layout
    }
  }
  return "unknown";
}

const VERSION = packageVersion();

/** The command line program (without running it). */
export function program(): Command {
  const p = new Command("proxybroker")
    .description("ProxyBroker: exclusive, paced proxy leases for crawler fleets, over gRPC")
    .version(VERSION, "-V, --version", "print the version")
    .showHelpAfterError()
    .exitOverride();
  p.command("serve")
    .description("run the broker (settings from the environment: LISTEN_ADDRESS, REDIS_URL or REDIS_CLUSTER_NODES, PROXIES_FILE, …)")
    .action(async () => {
      await serve();
    });
  return p;
}

async function main(argv: readonly string[]): Promise<void> {
  try {
    await program().parseAsync([...argv], { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0; a bad command or option with 2
      process.exit(err.exitCode === 0 ? 0 : 2);
    }
    log(`failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}

void main(process.argv.slice(2));
