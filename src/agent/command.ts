import type { Command } from "commander";
import { defaultWorkerId } from "@proxybroker/sdk";
import { createLogger } from "../observe/log.js";
import { Agent } from "./agent.js";
import { AGENT_ENV, agentSettings } from "./settings.js";
import type { AgentInput } from "./settings.js";

/**
 * `proxybroker agent`: the per-machine sidecar that serves the broker's own protocol to the
 * workers of its machine, with the SDK's fallback pool inside (docs/agent.md).
 */
export function addAgentCommand(p: Command): void {
  const env = process.env;
  const def = (k: keyof AgentInput): string | undefined => env[AGENT_ENV[k]];
  p.command("agent")
    .description("run the agent: the broker's protocol for this machine's workers, crawling on through outages")
    .option(
      "--listen <address>",
      "where workers connect, host:port or unix:/path (AGENT_LISTEN_ADDRESS; default 127.0.0.1:50052)",
      def("listen"),
    )
    .option("--address <host:port[,host:port]>", "the broker(s) (PROXYBROKER_ADDRESS; default 127.0.0.1:50051)", def("address"))
    .option("--pool <pool>", "the pool when a request names none (AGENT_POOL; default default)", def("pool"))
    .option("--worker-id <id>", "the agent's worker id at the broker (AGENT_WORKER_ID)", def("workerId"))
    .option("--lease-ttl-ms <ms>", "the longest a grant or renewal runs, 100 to 1000 (AGENT_LEASE_TTL_MS; default 1000)", def("leaseTtlMs"))
    .option(
      "--silent-after-ms <ms>",
      "a broker connection that answers nothing this long is an outage (AGENT_SILENT_AFTER_MS; 1000 to 3000, default 3000)",
      def("silentAfterMs"),
    )
    .option(
      "--snapshot-file <file>",
      "keep the fallback pool's snapshot here, to serve from it when started in an outage (AGENT_SNAPSHOT_FILE)",
      def("snapshotFile"),
    )
    .option("--tokens-file <file>", "client tokens (AGENT_TOKENS_FILE; not served yet: bind to loopback)", def("tokensFile"))
    .action(async (o: AgentInput) => {
      // the broker token only from the environment: a flag would show in `ps`
      const settings = agentSettings({ ...o, token: env[AGENT_ENV.token] }, `agent-${defaultWorkerId(env)}`);
      const logger = createLogger();
      const agent = await Agent.start(settings, {
        onMode: (pool, mode) =>
          logger.info({ pool, mode }, `pool ${pool}: leases now come from the ${mode === "broker" ? "broker" : "fallback pool"}`),
      });
      logger.info(
        `agent listening on ${agent.address} (brokers ${settings.brokerTarget}, pool ${settings.pool}, grants of at most ${settings.leaseTtlMs} ms)`,
      );
      await new Promise<void>((resolve) => {
        let stopping = false;
        const stop = (signal: string): void => {
          if (stopping) return;
          stopping = true;
          logger.info(`${signal}: stopping the agent (its clients' leases released)`);
          void agent.stop().finally(resolve);
        };
        process.on("SIGTERM", () => stop("SIGTERM"));
        process.on("SIGINT", () => stop("SIGINT"));
      });
    });
}
