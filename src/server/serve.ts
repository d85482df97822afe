import type { Server } from "node:http";
import { fileURLToPath } from "node:url";
import { loadSettings, SettingsError } from "../config/settings.js";
import type { Settings } from "../config/settings.js";
import { HealthChecker } from "../health/checker.js";
import { HealthService } from "../health/health-service.js";
import { healthTargets } from "../config/settings.js";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { probeProxy } from "../health/probe.js";
import { startMetricsServer } from "../observe/metrics-server.js";
import { loadProxiesFile } from "../config/proxies-file.js";
import { BrokerServer } from "./broker-server.js";
import type { StateLoss } from "../lease/policy-cache.js";
import { loadTokensFile } from "../security/tokens-file.js";
import type { TokenTable } from "../security/tokens.js";
import { transportLine } from "../security/tls.js";
import { createLogger } from "../observe/log.js";
import { createStore } from "../store/create-store.js";
import { inspectRedis, persistenceLine, refusal } from "../store/redis/index.js";

/**
 * `proxybroker serve`: the broker process — settings from the environment, the store, the proxies
 * file, the gRPC server, the metrics endpoint, and a draining shutdown on SIGTERM/SIGINT.
 */

/** Proxies of the proxies file added per store call. */
const PROXIES_FILE_CHUNK = 1_000;
const SAMPLE_POOL = fileURLToPath(new URL("../../examples/proxies.txt", import.meta.url));

/** The process's log (pino JSON lines; LOG_LEVEL). */
export const logger = createLogger();

/** One line at level info. */
export function log(message: string): void {
  logger.info(message);
}

/** One line at level warn. */
function warn(message: string): void {
  logger.warn(message);
}

/** One line at level fatal (the process is about to exit). */
function fatal(message: string): void {
  logger.fatal(message);
}

export async function serve(): Promise<void> {
  let settings: Settings;
  try {
    settings = loadSettings();
  } catch (err) {
    if (err instanceof SettingsError) {
      fatal(`refusing to start: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  process.on("unhandledRejection", (reason) => logger.error(`unhandled rejection (kept serving): ${String(reason)}`));

  const created = createStore(settings, (what, err) => logger.warn(`${what} failed: ${err instanceof Error ? err.message : String(err)}`));
  const { store, kind } = created;
  if (created.kind === "redis") {
    const safety = await inspectRedis(created.client);
    const refused = refusal(safety);
    if (refused !== undefined) {
      fatal(`refusing to start: ${refused}`);
      process.exit(2);
    }
    log(persistenceLine(safety));
  }
  const proxiesFile = settings.proxiesFile !== "" ? settings.proxiesFile : kind === "embedded" ? SAMPLE_POOL : "";
  const loadProxies = async (why: string): Promise<void> => {
    if (proxiesFile === "") return;
    const specs = await loadProxiesFile(proxiesFile);
    // in chunks: one store call per chunk, so a large file never blocks Redis for long
    let added = 0;
    let updated = 0;
    for (let i = 0; i < specs.length; i += PROXIES_FILE_CHUNK) {
      const r = await store.addProxies(settings.proxiesPool, specs.slice(i, i + PROXIES_FILE_CHUNK));
      added += r.added.length;
      updated += r.updated.length;
    }
    log(`${why}: loaded ${proxiesFile} into pool ${settings.proxiesPool}: ${added} added, ${updated} updated`);
  };
  await loadProxies("start");
  // The store lost a pool's state (Redis wiped, restarted without persistence), or may have lost
  // writes to it (its server changed and does not keep every write): grants are held for the
  // longest lease TTL granted there lately; the proxies file puts its proxies back. Once per loss.
  const onStateLost = (pool: string, loss: StateLoss): void => {
    const until = new Date(loss.heldUntil).toISOString();
    warn(
      loss.certain
        ? `the store lost the state of pool ${pool}: grants held until ${until} (the longest lease TTL granted there lately)`
        : `writes to pool ${pool} may have been lost: grants held until ${until} (the longest lease TTL granted there lately)`,
    );
    if (pool === settings.proxiesPool)
      loadProxies("state lost").catch((err: unknown) => logger.error(`reloading proxies failed: ${String(err)}`));
  };

  // Tokens: read at start (a bad file refuses to start), read again on SIGHUP (a bad file then
  // keeps the tokens in force).
  let tokens: TokenTable | undefined;
  if (settings.authTokensFile !== "") {
    try {
      tokens = await loadTokensFile(settings.authTokensFile);
    } catch (err) {
      fatal(`refusing to start: AUTH_TOKENS_FILE: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(2);
    }
    log(`authentication: ${tokens.size} token(s) from ${settings.authTokensFile} (SIGHUP reads it again)`);
  } else {
    warn("WARNING: no AUTH_TOKENS_FILE: anyone who reaches this port can lease proxies, add their own and read proxy passwords");
  }
  if (settings.authTokensFile !== "")
    process.on("SIGHUP", () => {
      loadTokensFile(settings.authTokensFile).then(
        (t) => {
          tokens = t;
          log(`SIGHUP: ${t.size} token(s) from ${settings.authTokensFile}`);
        },
        (err: unknown) => logger.error(`SIGHUP: kept the tokens in force: ${err instanceof Error ? err.message : String(err)}`),
      );
    });

  // The health checker: on every replica with a check URL; the holder of the leader lease runs it.
  const targets = healthTargets(settings);
  let metricsRef: BrokerServer["metrics"] | undefined;
  const checker =
    targets.size === 0
      ? undefined
      : new HealthChecker({
          store,
          targets,
          intervalMs: settings.healthCheckIntervalMs,
          timeoutMs: settings.healthCheckTimeoutMs,
          concurrency: settings.healthCheckConcurrency,
          probe: probeProxy,
          onResult: (_pool, result) => metricsRef?.healthResults.inc({ result }),
        });
  const owner = `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
  const health =
    checker === undefined
      ? undefined
      : new HealthService({
          store,
          checker,
          owner,
          leaderTtlMs: settings.healthLeaderTtlMs,
          intervalMs: settings.healthCheckIntervalMs,
          onLeader: (c) => {
            metricsRef?.healthLeader.set(c.leader ? 1 : 0);
            log(
              c.leader
                ? `health checker: this broker leads (term ${c.term})`
                : `health checker: standing by${c.holder !== "" ? ` (${c.holder} leads)` : ""}`,
            );
          },
          onError: (err) => warn(`health checker: ${err instanceof Error ? err.message : String(err)}`),
        });
  const server = await BrokerServer.start({
    store,
    settings,
    logger,
    processMetrics: true,
    onStateLost,
    tokens: () => tokens,
    ...(health === undefined ? {} : { healthPass: (pool, onProgress, signal) => health.pass(pool, onProgress, signal) }),
  });
  metricsRef = server.metrics;
  // The handlers go in before anything says the server is up: a SIGTERM that follows the
  // "listening" line at once (a supervisor, a test) drains instead of killing the process.
  let metrics: Server | undefined;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: draining (up to ${settings.shutdownGraceMs} ms)`);
    const hardExit = setTimeout(() => process.exit(1), settings.shutdownGraceMs + 2_000);
    hardExit.unref();
    void (async () => {
      await health?.stop();
      await server.shutdown(settings.shutdownGraceMs);
      metrics?.close();
      await store.close().catch(() => undefined);
      log("stopped");
      process.exit(0);
    })();
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  server.onServerChanged = ({ id, lossless }) =>
    lossless
      ? log(`the store's server restarted (now ${id}); it keeps every acknowledged write (AOF, appendfsync always): nothing held`)
      : warn(
          `the store's server changed (now ${id}) and may have lost writes (no AOF with appendfsync always, or a failover): grants held in every pool`,
        );
  const transport = transportLine({ certFile: settings.tlsCertFile, keyFile: settings.tlsKeyFile, clientCaFile: settings.tlsClientCaFile });
  log(`listening on ${settings.listenAddress}, ${transport} (store: ${kind === "redis" ? "redis" : "embedded, in-process"})`);
  if (settings.adminListenAddress !== "") log(`ProxyAdmin on ${settings.adminListenAddress} only`);
  server.metricsLeader = () => health?.leader ?? false;
  if (settings.metricsAddress !== "") metrics = await startMetricsServer(settings.metricsAddress, server.metrics.registry, server.status);
  if (metrics !== undefined)
    log(`metrics on http://${settings.metricsAddress}/metrics, the status page on http://${settings.metricsAddress}/`);
  if (stopping) return;
  if (health !== undefined) {
    health.start();
    log(
      `health checker: ${[...targets].map(([pool, url]) => `${pool} → ${url}`).join(", ")} every ${settings.healthCheckIntervalMs} ms, one replica at a time (leader lease ${settings.healthLeaderTtlMs} ms)`,
    );
  }
}
