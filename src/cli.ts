/**
 * The `proxybroker` command: `serve` runs the broker (what `npm start` runs; every setting is an
 * environment variable, docs/settings.md); `gateway` runs the HTTP(S) proxy gateway; the admin commands (import, list, stats, policy,
 * ban / unban / disable / enable, check, watch, audit) talk to a running broker. `--help` lists
 * them, `--version` prints the version. Exit codes: src/cli/exit.ts (0 done, 1 failed, 2 bad
 * usage, 3 done in part).
 */
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { log, serve } from "./server/serve.js";
import { addProxyCommands } from "./cli/proxies.js";
import { addPolicyCommands } from "./cli/policy.js";
import { addObserveCommands } from "./cli/observe.js";
import { addGatewayCommand } from "./gateway/command.js";
import { CliExit, EXIT } from "./cli/exit.js";

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
  addGatewayCommand(p);
  addProxyCommands(p, common);
  addPolicyCommands(p, common);
  addObserveCommands(p, common);
  return p;
}

/** The options of every admin command: where the broker is, how to reach it, which pool, JSON. */
function common(c: Command): Command {
  const env = process.env;
  return (
    c
      .option("--address <host:port>", "the broker (PROXYBROKER_ADDRESS)", env["PROXYBROKER_ADDRESS"] ?? "127.0.0.1:50051")
      // no default from the environment here: --help would print the token
      .option("--token <token>", "an admin token (default: $PROXYBROKER_TOKEN)")
      .option("--tls-ca <file>", "CA certificate of the broker's TLS (PEM)")
      .option("--tls-cert <file>", "client certificate (mTLS, PEM)")
      .option("--tls-key <file>", "client key (mTLS, PEM)")
      .option("--pool <pool>", "the pool", "default")
      .option("--json", "JSON output for scripts")
  );
}

async function main(argv: readonly string[]): Promise<void> {
  // `proxybroker list --json | head`: a reader that stops reading ends the command quietly
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(EXIT.ok);
    throw err;
  });
  try {
    await program().parseAsync([...argv], { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0; a bad command or option with 2
      process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage);
    }
    if (err instanceof CliExit) {
      if (err.message !== "") process.stderr.write(`proxybroker: ${err.message}\n`);
      process.exit(err.code);
    }
    log(`failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}

void main(process.argv.slice(2));
