/**
 * Throughput phase: C concurrent clients, each fetching the fast page in a loop (plain HTTP, a new
 * connection per request unless BENCH_GW_KEEPALIVE=1) for a warm-up and a measured window. Client
 * i fetches host i mod H. Through the gateway the pool holds all P tinyproxies and one policy for
 * every host sets no interval, fixed (no pacing, known to the broker: its leases are reusable,
 * kept by the gateway; one lease per (proxy, host)): C/H clients per host against P
 * proxies, so a lease is always free and the broker's grant — not a wait — is what each request
 * pays. The same clients straight to the tinyproxies (client i → tinyproxy i mod P) give the
 * rig's own ceiling on this machine, and through proxy-chain alone (bench/gateway-chain.ts, the
 * P tinyproxies in turn, no lease) what the gateway's proxy server costs without the leases.
 */
import { Agent } from "node:http";
import { percentiles } from "./meter.js";
import { pause } from "./pause.js";
import { proxiedGet } from "./gateway-client.js";
import type { GatewayBenchConfig } from "./gateway-config.js";
import type { Rig } from "./gateway-rig.js";
import { machineBusyUs, ownCpuUs, processCpuUs } from "./process-cpu.js";

export interface ThroughputRow {
  readonly label: string;
  readonly requestsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Answers other than 200 (by status) and failed requests in the window. */
  readonly notOk: Readonly<Record<string, number>>;
  /** Cores used in the window: the proxy process (the gateway or proxy-chain; NaN for the direct row), broker, Redis, the tinyproxies, this process (clients and site), the whole machine. */
  readonly cores: { proxy: number; broker: number; redis: number; tinyproxies: number; bench: number; machine: number };
  /** The proxy process's CPU per request, µs. */
  readonly proxyCpuUsPerRequest: number;
}

const POOL = "throughput";

interface Window {
  readonly startAt: number;
  readonly endAt: number;
}

async function drive(
  config: GatewayBenchConfig,
  target: (client: number) => { proxy: string; url: string },
  pids: { proxy: number | undefined; broker: number; redis: number; tinyproxies: readonly number[] },
  label: string,
): Promise<ThroughputRow> {
  const agent = config.keepAlive ? new Agent({ keepAlive: true, maxSockets: config.clients }) : undefined;
  const now = performance.now();
  const window: Window = {
    startAt: now + config.throughputWarmupSeconds * 1_000,
    endAt: now + (config.throughputWarmupSeconds + config.throughputSeconds) * 1_000,
  };
  const latencies: number[] = [];
  const notOk: Record<string, number> = {};
  let ok = 0;
  const loop = async (client: number): Promise<void> => {
    const { proxy, url } = target(client);
    while (performance.now() < window.endAt) {
      const a = await proxiedGet({ proxy, url, ...(agent === undefined ? {} : { agent }) }).catch((err: unknown) =>
        err instanceof Error ? err.message : String(err),
      );
      const end = performance.now();
      if (end < window.startAt || end > window.endAt) continue;
      if (typeof a === "string") notOk["error"] = (notOk["error"] ?? 0) + 1;
      else if (a.status !== 200) notOk[String(a.status)] = (notOk[String(a.status)] ?? 0) + 1;
      else {
        ok++;
        latencies.push(a.ms);
      }
    }
  };
  const cpu = (): number[] => [
    pids.proxy === undefined ? Number.NaN : processCpuUs(pids.proxy),
    processCpuUs(pids.broker),
    processCpuUs(pids.redis),
    pids.tinyproxies.reduce((s, pid) => s + processCpuUs(pid), 0),
    ownCpuUs(),
    machineBusyUs(),
  ];
  const loops = Array.from({ length: config.clients }, (_, i) => loop(i));
  await pause(Math.max(0, window.startAt - performance.now()));
  const before = cpu();
  await pause(Math.max(0, window.endAt - performance.now()));
  const after = cpu();
  await Promise.all(loops);
  agent?.destroy();
  const seconds = config.throughputSeconds;
  const used = after.map((a, i) => (a - (before[i] ?? 0)) / 1e6 / seconds);
  const { p50, p99 } = percentiles(latencies);
  return {
    label,
    requestsPerSec: ok / seconds,
    p50Ms: p50,
    p99Ms: p99,
    notOk,
    cores: {
      proxy: used[0] ?? Number.NaN,
      broker: used[1] ?? Number.NaN,
      redis: used[2] ?? Number.NaN,
      tinyproxies: used[3] ?? Number.NaN,
      bench: used[4] ?? Number.NaN,
      machine: used[5] ?? Number.NaN,
    },
    proxyCpuUsPerRequest: ((used[0] ?? Number.NaN) * 1e6) / Math.max(1, ok / seconds),
  };
}

export async function runThroughput(rig: Rig, config: GatewayBenchConfig): Promise<ThroughputRow[]> {
  const hosts = rig.site.hosts.slice(2);
  const urlOf = (client: number): string => `http://${hosts[client % hosts.length] ?? ""}:${rig.site.port}/page`;
  const broker = rig.broker.pid() ?? 0;
  const redis = rig.redis.pid() ?? 0;
  const tinyproxies = rig.tinyproxyPids;
  const rows: ThroughputRow[] = [];
  rows.push(
    await drive(
      config,
      (c) => ({ proxy: rig.proxies[c % rig.proxies.length] ?? "", url: urlOf(c) }),
      { proxy: undefined, broker, redis, tinyproxies },
      "tinyproxies directly",
    ),
  );
  await rig.addPool(POOL, rig.proxies);
  // the hosts are known not to be paced: a host no policy names gets no kept leases
  await rig.setPolicy(POOL, { pattern: "*", fixedInterval: true });
  // proxy-chain alone and the gateway in turn, round after round (the machine's state drifts:
  // a ratio counts within one round); the gateway with leases not kept, once, last
  const rounds = config.throughputRounds;
  for (let round = 1; round <= rounds; round++) {
    const tag = rounds === 1 ? "" : ` (round ${round})`;
    const chain = await rig.chain(rig.proxies);
    try {
      const pids = { proxy: chain.pid, broker, redis, tinyproxies };
      rows.push(await drive(config, (c) => ({ proxy: chain.address, url: urlOf(c) }), pids, `proxy-chain alone → tinyproxies${tag}`));
    } finally {
      await chain.stop();
    }
    rows.push(await throughGateway(rig, config, { broker, redis, tinyproxies }, `gateway → tinyproxies${tag}`, {}, urlOf));
  }
  rows.push(
    await throughGateway(rig, config, { broker, redis, tinyproxies }, "gateway, leases not kept", { GATEWAY_KEEP_IDLE_MS: "0" }, urlOf),
  );
  return rows;
}

async function throughGateway(
  rig: Rig,
  config: GatewayBenchConfig,
  pids: { broker: number; redis: number; tinyproxies: readonly number[] },
  label: string,
  env: Readonly<Record<string, string>>,
  urlOf: (client: number) => string,
): Promise<ThroughputRow> {
  const gateway = await rig.gateway(POOL, env);
  try {
    return await drive(config, (c) => ({ proxy: gateway.address, url: urlOf(c) }), { proxy: gateway.pid, ...pids }, label);
  } finally {
    await gateway.stop();
  }
}
