/**
 * The `proxybroker` command line: `serve` runs the broker (what `npm start` runs; every setting is
 * an environment variable, docs/settings.md); `gateway` runs the HTTP(S) proxy gateway; the admin
 * commands (import, list, stats, policy, ban / unban / disable / enable, check, watch, audit, source) talk
 * to a running broker. `--help` lists them, `--version` prints the version. Exit codes:
 * ./exit.ts (0 done, 1 failed, 2 bad usage, 3 done in part).
 */
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { addAgentCommand } from "../agent/command.js";
import { addGatewayCommand } from "../gateway/command.js";
import { serve } from "../server/serve.js";
import { CliExit, EXIT } from "./exit.js";
import { cliIO, withIO } from "./io.js";
import type { CliIO } from "./io.js";
import { addObserveCommands } from "./observe.js";
import { addPolicyCommands } from "./policy.js";
import { addProxyCommands } from "./proxies.js";
import { addSourceCommands } from "./sources.js";

/** The package's version: its package.json is two levels up from src/cli/, three from dist/src/cli/. */
function packageVersion(): string {
  for (const rel of ["../../package.json", "../../../package.json"]) {
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

/** The command line program (without running it); its output goes to the IO in force. */
export function program(): Command {
  const io = cliIO();
  const p = new Command("proxybroker")
    .description("ProxyBroker: exclusive, paced proxy leases for crawler fleets, over gRPC")
    .version(VERSION, "-V, --version", "print the version")
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.out.write(s), writeErr: (s) => io.err.write(s) })
    .exitOverride();
  p.command("serve")
    .description("run the broker (settings from the environment: LISTEN_ADDRESS, REDIS_URL or REDIS_CLUSTER_NODES, PROXIES_FILE, …)")
    .action(async () => {
      await serve();
    });
  addGatewayCommand(p);
  addAgentCommand(p);
  addProxyCommands(p, common);
  addPolicyCommands(p, common);
  addObserveCommands(p, common);
  addSourceCommands(p, common);
  return p;
}

/** The options of every admin command: where the broker is, how to reach it, which pool, JSON. */
function common(c: Command): Command {
  const env = cliIO().env;
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

/**
 * Run one command line (without the program name) with `io`, and give its exit code: 0 also after
 * --help and --version, 2 for a bad command or option, a CliExit's code (its message on stderr).
 * Anything else is thrown.
 */
export function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  return withIO(io, async () => {
    try {
      await program().parseAsync([...argv], { from: "user" });
      return EXIT.ok;
    } catch (err) {
      if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
      if (err instanceof CliExit) {
        if (err.message !== "") io.err.write(`proxybroker: ${err.message}\n`);
        return err.code;
      }
      throw err;
    }
  });
}
