/**
 * `npm run bench:gateway`: what `proxybroker gateway` costs and holds, on this machine, against
 * real tinyproxies (Debian's `tinyproxy`, as root: test/support/tinyproxies.ts), one broker
 * process on a fresh redis-server (production defaults), and a local HTTP site and TCP echo
 * service on loopback addresses 127.2.x.y and 127.3.x.y. Each phase starts its own gateway
 * process (crawl/gateway-process.ts, `GATEWAY_DENY_TARGETS=none`) with its own pool:
 *
 * 1. latency — p50/p99 of one fast page through the tinyproxy directly, through proxy-chain alone
 *    chaining to it (bench/gateway-chain.ts) and through the gateway, round-robin in one run;
 * 2. throughput — requests/s of C concurrent clients through one gateway (P tinyproxies, H hosts,
 *    no pacing: a lease is always free), beside the same clients straight to the tinyproxies and
 *    through proxy-chain alone;
 * 3. tunnels — the gateway's RSS with T CONNECT tunnels open at once, a lease each;
 * 4. download — one large body streamed through the gateway: its RSS sampled throughout, its lease
 *    (short TTL) renewed by heartbeats, probes showing its proxy was never given to anyone else.
 *
 * Settings (environment), defaults in brackets; the default run takes about 1.5 minutes:
 *   BENCH_GW_ONLY              phases to run, comma-separated [latency,throughput,tunnels,download,pools]
 *   BENCH_GW_PROXIES           tinyproxies [20]
 *   BENCH_GW_LATENCY_ROUNDS    measured rounds, one request per path each [2000]
 *   BENCH_GW_LATENCY_WARMUP    warm-up rounds [200]
 *   BENCH_GW_CLIENTS           concurrent clients of the throughput phase [200]
 *   BENCH_GW_HOSTS             its target hosts [20]
 *   BENCH_GW_SECONDS           its measured window, s [10]
 *   BENCH_GW_WARMUP_SECONDS    its warm-up, s [2]
 *   BENCH_GW_KEEPALIVE         1: its clients keep connections alive [0: a new one per request]
 *   BENCH_GW_TUNNELS           tunnels held at once [1000]
 *   BENCH_GW_TUNNEL_HOSTS      echo hosts they go to [100]
 *   BENCH_GW_DOWNLOAD_BYTES    the download's size [1073741824, 1 GiB]
 *   BENCH_GW_DOWNLOAD_TTL_MS   the download host's lease TTL (domain policy; ≥ the broker's LEASE_TTL_MIN_MS, 1 s) [1000]
 *   BENCH_GW_POOL_NAMES        distinct pool names the pools phase sends [500]
 *   BENCH_GW_PROFILE           1: each gateway under node --cpu-prof (.bench/profiles/gateway/) [off]
 *
 * Prints one table per phase (Markdown) and writes .bench/gateway.json.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import { resolve } from "node:path";
import { recordsLine } from "../crawl/records-line.js";
import { loadGatewayBenchConfig } from "./gateway-config.js";
import { runDownload } from "./gateway-download.js";
import { runLatency } from "./gateway-latency.js";
import { runPools } from "./gateway-pools.js";
import { gatewayReport } from "./gateway-report.js";
import type { GatewayBenchResults } from "./gateway-report.js";
import { startRig } from "./gateway-rig.js";
import { runThroughput } from "./gateway-throughput.js";
import { runTunnels } from "./gateway-tunnels.js";

const RESULT_FILE = ".bench/gateway.json";
const written: string[] = [];

async function main(): Promise<void> {
  const config = loadGatewayBenchConfig();
  const log = (s: string): void => void process.stderr.write(`bench:gateway: ${s}\n`);
  log(`${config.phases.join(", ")}; ${config.proxies} tinyproxies; ${cpus().length} cores (${cpus()[0]?.model ?? "?"})`);
  const rig = await startRig(config);
  const results: GatewayBenchResults = {};
  try {
    for (const phase of config.phases) {
      log(`${phase}…`);
      if (phase === "latency") results.latency = await runLatency(rig, config);
      if (phase === "throughput") results.throughput = await runThroughput(rig, config);
      if (phase === "tunnels") results.tunnels = await runTunnels(rig, config);
      if (phase === "download") results.download = await runDownload(rig, config);
      if (phase === "pools") results.pools = await runPools(rig, config);
    }
  } finally {
    await rig.close();
  }
  process.stdout.write(`\n${gatewayReport(results, config)}\n\n`);
  await mkdir(".bench", { recursive: true });
  await writeFile(RESULT_FILE, `${JSON.stringify({ at: new Date().toISOString(), cores: cpus().length, config, results }, null, 2)}\n`);
  written.push(resolve(RESULT_FILE));
}

// Ctrl-C / SIGTERM: exit, so the exit hooks kill redis-server, the tinyproxies, the broker and the gateway.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

main().then(
  () => {
    process.stdout.write(`${recordsLine("bench:gateway", written)}\n`);
    process.exit(0);
  },
  (err: unknown) => {
    process.stderr.write(`bench:gateway failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.stdout.write(`${recordsLine("bench:gateway", written)}\n`);
    process.exit(1);
  },
);
