import { readFile } from "node:fs/promises";
import { PoolClients } from "./pool-clients.js";
import { shutdownSignals } from "./shutdown-signals.js";
import type { Command } from "commander";
import { ProxyBrokerClient, defaultWorkerId } from "@proxybroker/sdk";
import { createLogger } from "../observe/log.js";
import { startMetricsServer } from "../observe/metrics-server.js";
import { loadTokensFile } from "../security/tokens-file.js";
import { Gateway } from "./gateway.js";
import { HostCerts } from "./host-certs.js";
import { GATEWAY_ENV, gatewaySettings } from "./settings.js";
import type { GatewayInput, GatewaySettings } from "./settings.js";
import { TargetPolicy } from "./targets.js";

/**
 * `proxybroker gateway`: the lease-aware HTTP(S) forward proxy in front of the SDK. Every setting
 * is an environment variable and a flag (the flag wins).
 */
/** A second signal this soon after the first is the same shutdown (see shutdown-signals.ts). */
const SAME_SHUTDOWN_MS = 1_000;

export function addGatewayCommand(p: Command): void {
  const env = process.env;
  const def = (k: keyof GatewayInput): string | undefined => env[GATEWAY_ENV[k]];
  p.command("gateway")
    .description("run the HTTP(S) proxy gateway: any crawler leases through the broker by setting a proxy URL")
    .option("--listen <host:port>", "where clients connect (GATEWAY_LISTEN_ADDRESS; default 127.0.0.1:8899)", def("listen"))
    .option("--address <host:port[,host:port]>", "the broker(s) (PROXYBROKER_ADDRESS; default 127.0.0.1:50051)", def("address"))
    .option("--pool <pool>", "the pool when a request names none (GATEWAY_POOL; default default)", def("pool"))
    .option("--worker-id <id>", "the gateway's worker id at the broker (GATEWAY_WORKER_ID)", def("workerId"))
    .option("--tokens-file <file>", "client tokens, the proxy password (GATEWAY_TOKENS_FILE; needed off loopback)", def("tokensFile"))
    .option(
      "--deny-targets <cidrs>",
      "targets refused, CIDRs or none (GATEWAY_DENY_TARGETS; default loopback, link-local, metadata, this machine's addresses)",
      def("denyTargets"),
    )
    .option("--wait-ms <ms>", "wait for a proxy when a request names none (GATEWAY_WAIT_MS; default 10000)", def("waitMs"))
    .option("--max-wait-ms <ms>", "the longest wait a request may ask for (GATEWAY_MAX_WAIT_MS; default 60000)", def("maxWaitMs"))
    .option("--tunnel-idle-ms <ms>", "close a CONNECT tunnel idle this long (GATEWAY_TUNNEL_IDLE_MS; default 60000)", def("tunnelIdleMs"))
    .option(
      "--tunnel-max-life-ms <ms>",
      "close a CONNECT tunnel this old (GATEWAY_TUNNEL_MAX_LIFE_MS; default 600000)",
      def("tunnelMaxLifeMs"),
    )
    .option(
      "--tunnel-unknown-interval-ms <ms>",
      "release a tunnel's lease this long after it closed when no policy paces its host: the site's 429s are unseen inside a tunnel (GATEWAY_TUNNEL_UNKNOWN_INTERVAL_MS; default 1000; 0: at once)",
      def("tunnelUnknownIntervalMs"),
    )
    .option("--max-connections <n>", "client connections at once (GATEWAY_MAX_CONNECTIONS; default 1024)", def("maxConnections"))
    .option(
      "--request-timeout-ms <ms>",
      "time for a client to send a request (GATEWAY_REQUEST_TIMEOUT_MS; default 300000)",
      def("requestTimeoutMs"),
    )
    .option(
      "--upstream-timeout-ms <ms>",
      "time for a site's answer (and an upstream CONNECT) to start (GATEWAY_UPSTREAM_TIMEOUT_MS; default 60000)",
      def("upstreamTimeoutMs"),
    )
    .option("--ca-cert-file <file>", "CA certificate (PEM): intercept HTTPS, a lease per request (GATEWAY_CA_CERT_FILE)", def("caCertFile"))
    .option("--ca-key-file <file>", "the CA's key (PEM), with --ca-cert-file (GATEWAY_CA_KEY_FILE)", def("caKeyFile"))
    .option("--upstream-ca-file <file>", "CAs to trust for the sites when intercepting (GATEWAY_UPSTREAM_CA_FILE)", def("upstreamCaFile"))
    .option("--metrics-address <host:port>", "serve /metrics there (GATEWAY_METRICS_ADDRESS; default none)", def("metricsAddress"))
    .option(
      "--shutdown-grace-ms <ms>",
      "on SIGTERM, time for requests in flight to finish (GATEWAY_SHUTDOWN_GRACE_MS; default 10000)",
      def("shutdownGraceMs"),
    )
    .option(
      "--connect-ports <ports>",
      "ports a CONNECT may reach, comma-separated, or any (GATEWAY_CONNECT_PORTS; default 443)",
      def("connectPorts"),
    )
    .option(
      "--deny-private <1|0>",
      "refuse the private ranges too (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7): for a gateway shared across networks (GATEWAY_DENY_PRIVATE)",
      def("denyPrivate"),
    )
    .option("--max-pools <n>", "pools served at once; beyond, a 400 (GATEWAY_MAX_POOLS; default 64)", def("maxPools"))
    .option(
      "--pool-idle-ms <ms>",
      "a pool's client that holds no lease and was not asked for one this long is closed, and leaves the pool (GATEWAY_POOL_IDLE_MS; default 300000)",
      def("poolIdleMs"),
    )
    .option(
      "--keep-idle-ms <ms>",
      "keep a lease whose pair is not paced this long for the next request of its host, 0: never (GATEWAY_KEEP_IDLE_MS; default 250)",
      def("keepIdleMs"),
    )
    .option(
      "--keep-max-ms <ms>",
      "give a kept lease back to the broker this long after it was first kept (GATEWAY_KEEP_MAX_MS; default 5000)",
      def("keepMaxMs"),
    )
    .option(
      "--credentials <mode>",
      "required: answer a request without proxy credentials 407, so browsers send their username and its parameters (GATEWAY_CREDENTIALS; optional or required, default optional)",
      def("credentials"),
    )
    .option(
      "--silent-after-ms <ms>",
      "a broker connection that answers nothing this long is an outage: the fallback pool takes over (GATEWAY_SILENT_AFTER_MS; 1000 to 3000, default 3000)",
      def("silentAfterMs"),
    )
    .action(async (o: GatewayInput) => {
      // the broker token only from the environment: a flag would show in `ps`
      const settings = gatewaySettings({ ...o, token: env[GATEWAY_ENV.token] }, `gateway-${defaultWorkerId(env)}`);
      await runGateway(settings);
    });
}

/**
 * Run until SIGTERM/SIGINT: then stop listening, let the requests in flight finish (at most
 * `shutdownGraceMs`; a second signal cuts them), close the connections, release every lease
 * and leave the pools (the SDK clients' `close`).
 */
export async function runGateway(s: GatewaySettings): Promise<void> {
  const logger = createLogger();
  const tokens = s.tokensFile === undefined ? undefined : await loadTokensFile(s.tokensFile);
  const intercept =
    s.caCertFile === undefined || s.caKeyFile === undefined
      ? undefined
      : {
          certs: new HostCerts(await readFile(s.caCertFile, "utf8"), await readFile(s.caKeyFile, "utf8")),
          upstreamCa: s.upstreamCaFile === undefined ? undefined : [await readFile(s.upstreamCaFile, "utf8")],
        };
  const clients = new PoolClients({
    pool: s.pool,
    maxPools: s.maxPools,
    idleMs: s.poolIdleMs,
    make: (pool) => {
      const c = new ProxyBrokerClient({
        address: s.brokerTarget,
        pool,
        workerId: s.workerId,
        fallback: { silentAfterMs: s.silentAfterMs },
        ...(s.brokerToken === undefined ? {} : { token: s.brokerToken }),
      });
      c.on("mode", (mode) =>
        logger.info({ pool, mode }, `pool ${pool}: leases now come from the ${mode === "broker" ? "broker" : "fallback pool"}`),
      );
      return c;
    },
  });
  const client = (pool: string): ProxyBrokerClient => clients.get(pool);
  client(s.pool); // the default pool's client starts at once: its fallback pool gets ready meanwhile
  clients.start();
  const gateway = new Gateway({
    host: s.host,
    port: s.port,
    client,
    pool: s.pool,
    targets: new TargetPolicy(s.denyTargets, [...s.brokerAddresses, `${s.host}:${s.port}`]),
    connectPorts: s.connectPorts,
    tokens,
    credentials: s.credentials,
    onBrowserWithoutCredentials: (userAgent) =>
      logger.warn(
        { userAgent: userAgent.slice(0, 200) },
        "a browser sent no proxy credentials: browsers send their proxy username (session, pool, labels …) only after a 407, so it was lost; start the gateway with GATEWAY_CREDENTIALS=required (docs/gateway.md)",
      ),
    waitMs: s.waitMs,
    maxWaitMs: s.maxWaitMs,
    tunnels: { idleMs: s.tunnelIdleMs, maxLifeMs: s.tunnelMaxLifeMs, unknownIntervalMs: s.tunnelUnknownIntervalMs },
    maxConnections: s.maxConnections,
    requestTimeoutMs: s.requestTimeoutMs,
    upstreamTimeoutMs: s.upstreamTimeoutMs,
    keep: { idleMs: s.keepIdleMs, maxMs: s.keepMaxMs },
    ...(intercept === undefined ? {} : { intercept }),
  });
  await gateway.start();
  const metrics = s.metricsAddress === undefined ? undefined : await startMetricsServer(s.metricsAddress, gateway.metrics.registry);
  if (metrics !== undefined) logger.info(`gateway metrics on http://${s.metricsAddress}/metrics`);
  logger.info(
    `gateway listening on ${gateway.address} (brokers ${s.brokerAddresses.join(", ")}, pool ${s.pool}, ${intercept === undefined ? "HTTPS tunnels: a lease per tunnel" : "HTTPS intercepted: a lease per request"}, ${tokens === undefined ? `no client tokens: loopback only, credentials ${s.credentials}` : `${tokens.size} client token(s)`})`,
  );
  await new Promise<void>((resolve) => {
    const signals = shutdownSignals({ sameWithinMs: SAME_SHUTDOWN_MS });
    const stop = (signal: string): void => {
      const meaning = signals.signal();
      if (meaning === "same") return; // the same shutdown, signalled twice at once (a process group)
      if (meaning === "cut") {
        logger.info(`${signal} again: closing every connection now`);
        void gateway.stop(0);
        return;
      }
      logger.info(`${signal}: closing the gateway (requests in flight get up to ${s.shutdownGraceMs / 1_000} s to finish)`);
      metrics?.close();
      void gateway
        .stop(s.shutdownGraceMs)
        .then(() => clients.closeAll())
        .then(() => logger.info("gateway stopped: its leases released"))
        .finally(resolve);
    };
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
  });
}
