/**
 * Tunnel phase: T CONNECT tunnels held open at once through one gateway in tunnel mode, each
 * holding its lease. Tunnel i goes to echo host i mod H (H loopback addresses, each its own
 * domain-key) through the pool of all P tinyproxies, no domain policy: P × H pairs, one lease
 * each, for T tunnels. Each tunnel is checked with an echo round trip when opened and again once
 * all are open. The gateway's RSS is read idle (after a warm-up of a few tunnels opened and
 * closed), with every tunnel open, and after they all closed.
 */
import { pause } from "./pause.js";
import { percentiles } from "./meter.js";
import { echo, openTunnel } from "./gateway-client.js";
import type { Socket } from "node:net";
import type { GatewayBenchConfig } from "./gateway-config.js";
import { rssBytes, scrape, total } from "./gateway-proc.js";
import type { Rig } from "./gateway-rig.js";

export interface TunnelsResult {
  readonly wanted: number;
  readonly opened: number;
  readonly failed: number;
  /** The first failure's message. */
  readonly firstFailure: string | undefined;
  readonly openSeconds: number;
  readonly openP50Ms: number;
  readonly openP99Ms: number;
  /** The broker's live leases with all open. */
  readonly brokerLiveLeases: number;
  /** …and once they closed. */
  readonly brokerLiveLeasesAfterClose: number;
  /** Tunnels that echoed again once all were open. */
  readonly echoedAgain: number;
  readonly rssIdle: number;
  /** The largest of the samples taken while all were open. */
  readonly rssOpen: number;
  readonly rssAfterClose: number;
}

const POOL = "tunnels";
const OPEN_CONCURRENCY = 50;
const WARMUP_TUNNELS = 20;

/** Open `count` tunnels, `concurrency` at a time; what failed is counted, not thrown. */
async function openMany(gateway: string, targets: readonly string[], concurrency: number) {
  const sockets: Socket[] = [];
  const times: number[] = [];
  const failures: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < targets.length; i = next++) {
      const started = performance.now();
      try {
        sockets.push(await openTunnel(gateway, targets[i] ?? ""));
        times.push(performance.now() - started);
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { sockets, times, failures };
}

async function closeAll(sockets: readonly Socket[]): Promise<void> {
  await Promise.all(
    sockets.map(
      (s) =>
        new Promise<void>((resolve) => {
          if (s.destroyed) return resolve();
          s.once("close", () => resolve());
          s.destroy();
        }),
    ),
  );
}

/** Poll the broker's live-lease gauge until it reads `want` (or `timeoutMs` passed); the last reading. */
async function liveLeasesReach(metrics: string, want: number, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const n = total(await scrape(metrics), "proxybroker_live_leases");
    if (n === want || performance.now() > deadline) return n;
    await pause(100);
  }
}

export async function runTunnels(rig: Rig, config: GatewayBenchConfig): Promise<TunnelsResult> {
  await rig.addPool(POOL, rig.proxies);
  const hosts = rig.echo.hosts;
  const targets = Array.from({ length: config.tunnels }, (_, i) => `${hosts[i % hosts.length] ?? ""}:${rig.echo.port}`);
  const gateway = await rig.gateway(POOL);
  const opened: Socket[] = [];
  try {
    const warm = await openMany(gateway.address, targets.slice(0, WARMUP_TUNNELS), 10);
    await closeAll(warm.sockets);
    await liveLeasesReach(rig.brokerMetrics, 0, 10_000);
    await pause(2_000);
    const rssIdle = rssBytes(gateway.pid);
    const started = performance.now();
    const { sockets, times, failures } = await openMany(gateway.address, targets, OPEN_CONCURRENCY);
    opened.push(...sockets);
    const openSeconds = (performance.now() - started) / 1_000;
    const brokerLiveLeases = await liveLeasesReach(rig.brokerMetrics, sockets.length, 5_000);
    let rssOpen = 0;
    for (let i = 0; i < 10; i++) {
      await pause(200);
      rssOpen = Math.max(rssOpen, rssBytes(gateway.pid));
    }
    const again = await Promise.all(
      sockets.map((s, i) =>
        echo(s, `again ${i}\n`, 10_000).then(
          () => true,
          () => false,
        ),
      ),
    );
    rssOpen = Math.max(rssOpen, rssBytes(gateway.pid));
    await closeAll(sockets);
    const brokerLiveLeasesAfterClose = await liveLeasesReach(rig.brokerMetrics, 0, 10_000);
    await pause(2_000);
    const { p50, p99 } = percentiles(times);
    return {
      wanted: config.tunnels,
      opened: sockets.length,
      failed: failures.length,
      firstFailure: failures[0],
      openSeconds,
      openP50Ms: p50,
      openP99Ms: p99,
      brokerLiveLeases,
      brokerLiveLeasesAfterClose,
      echoedAgain: again.filter((x) => x).length,
      rssIdle,
      rssOpen,
      rssAfterClose: rssBytes(gateway.pid),
    };
  } finally {
    await closeAll(opened);
    await gateway.stop();
  }
}
