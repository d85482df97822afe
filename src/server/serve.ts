import { probeFirstPools } from "../config/settings.js";
import type { StateLoss } from "../lease/policy-cache.js";
import { HealthMetrics } from "../observe/health-metrics.js";
import { startMetricsServer } from "../observe/metrics-server.js";
import { transportLine } from "../security/tls.js";
import { BrokerServer } from "./broker-server.js";
import { healthOf } from "./process/health.js";
import { log, logger, messageOf, warn } from "./process/log.js";
import { settingsOrExit } from "./process/settings.js";
import { drainOnSignals } from "./process/shutdown.js";
import { openStore, proxiesLoader } from "./process/store.js";
import { readTokens } from "./process/tokens.js";

export { log, logger } from "./process/log.js";

/**
 * `proxybroker serve`: the broker process, in the order it starts — settings from the environment,
 * the store, the health checker (not started), the proxies file, the tokens, the gRPC server, the metrics
 * endpoint, a draining shutdown on SIGTERM/SIGINT, then the lines that say it is up.
 */
export async function serve(): Promise<void> {
  const settings = settingsOrExit();
  process.on("unhandledRejection", (reason) => logger.error(`unhandled rejection (kept serving): ${String(reason)}`));

  const opened = await openStore(settings);
  const { store } = opened;
  const healthMetrics = new HealthMetrics();
  const health = healthOf({ settings, store, metrics: healthMetrics });
  // proxies put back after the store lost its state are probed at once (their exits went with it)
  const loadProxies = proxiesLoader({ settings, opened, onAdded: (pool, ids) => health?.service.checkNew(pool, ids) });
  await loadProxies("start");

  const tokens = await readTokens(settings);

  const server = await BrokerServer.start({
    store,
    settings,
    logger,
    processMetrics: true,
    probeFirstPools: probeFirstPools(settings),
    onStateLost: (pool, loss) => stateLost({ pool, loss, proxiesPool: settings.proxiesPool, loadProxies }),
    onServerChanged: serverChanged,
    tokens,
    healthMetrics,
    healthLeader: () => health?.service.leader ?? false,
    ...(health === undefined
      ? {}
      : {
          healthPass: (pool, onProgress, signal) => health.service.pass(pool, onProgress, signal),
          probeNew: (pool, ids) => health.service.checkNew(pool, ids),
          refreshSource: health.refreshSource,
          readSourceHeaders: health.readSourceHeaders,
        }),
  });
  const metrics =
    settings.metricsAddress === ""
      ? undefined
      : await startMetricsServer(settings.metricsAddress, server.metrics.registry, server.status, { tokens });
  drainOnSignals({ health: health?.service, sources: health?.sources, server, metrics, store }, settings.shutdownGraceMs);

  const transport = transportLine({ certFile: settings.tlsCertFile, keyFile: settings.tlsKeyFile, clientCaFile: settings.tlsClientCaFile });
  log(`listening on ${settings.listenAddress}, ${transport} (store: ${opened.kind === "redis" ? "redis" : "embedded, in-process"})`);
  if (settings.adminListenAddress !== "") log(`ProxyAdmin on ${settings.adminListenAddress} only`);
  if (metrics !== undefined)
    log(
      `metrics on http://${settings.metricsAddress}/metrics, the status page on http://${settings.metricsAddress}/${tokens() === undefined ? "" : " (for an admin token)"}`,
    );
  if (health !== undefined) {
    health.service.start();
    health.sources.start();
    log(health.describe);
  }
}

/**
 * The store lost a pool's state (Redis wiped, restarted without persistence), or may have lost
 * writes to it (its server changed and does not keep every write): grants are held for the
 * longest lease TTL granted there lately; the proxies file puts its proxies back. Once per loss.
 */
function stateLost(opts: { pool: string; loss: StateLoss; proxiesPool: string; loadProxies: (why: string) => Promise<void> }): void {
  const until = new Date(opts.loss.heldUntil).toISOString();
  warn(
    opts.loss.certain
      ? `the store lost the state of pool ${opts.pool}: grants held until ${until} (the longest lease TTL granted there lately)`
      : `writes to pool ${opts.pool} may have been lost: grants held until ${until} (the longest lease TTL granted there lately)`,
  );
  if (opts.pool === opts.proxiesPool)
    opts.loadProxies("state lost").catch((err: unknown) => logger.error(`reloading proxies failed: ${messageOf(err)}`));
}

/** The store's server changed: say whether it may have lost writes. */
function serverChanged(change: { readonly id: string; readonly lossless: boolean }): void {
  if (change.lossless)
    log(`the store's server restarted (now ${change.id}); it keeps every acknowledged write (AOF, appendfsync always): nothing held`);
  else
    warn(
      `the store's server changed (now ${change.id}) and may have lost writes (no AOF with appendfsync always, or a failover): grants held in every pool`,
    );
}
