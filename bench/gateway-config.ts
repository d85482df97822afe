import { resolve } from "node:path";
import { int } from "./config.js";

/** The phases of `npm run bench:gateway`, in the order they run. */
export const GATEWAY_PHASES = ["latency", "throughput", "tunnels", "download", "pools"] as const;
export type GatewayPhase = (typeof GATEWAY_PHASES)[number];

/** The settings of `npm run bench:gateway` (environment; bench/gateway.ts lists them). */
export interface GatewayBenchConfig {
  /** Real tinyproxies started (the throughput and tunnel pools use them all). */
  readonly proxies: number;
  /** Latency: measured rounds (one request per path each) and warm-up rounds. */
  readonly latencyRounds: number;
  readonly latencyWarmup: number;
  /** Throughput: concurrent clients, target hosts, measured and warm-up seconds, keep-alive. */
  readonly clients: number;
  readonly throughputHosts: number;
  readonly throughputSeconds: number;
  /** BENCH_GW_BUILT=1: the gateway runs compiled (dist/, as installed; `npm run build` first), not from the sources under tsx. */
  readonly built: boolean;
  /** Rounds of the throughput phase: proxy-chain alone and the gateway in turn, each round. */
  readonly throughputRounds: number;
  readonly throughputWarmupSeconds: number;
  readonly keepAlive: boolean;
  /** Tunnels: how many CONNECT tunnels held at once, to how many hosts. */
  readonly tunnels: number;
  readonly tunnelHosts: number;
  /** Download: its size in bytes, and the lease TTL of its host (domain policy). */
  readonly downloadBytes: number;
  readonly downloadTtlMs: number;
  /** Pools: distinct pool names sent. */
  readonly poolNames: number;
  readonly phases: readonly GatewayPhase[];
  /** BENCH_GW_PROFILE=1: each gateway runs under `node --cpu-prof`, its profile written here. */
  readonly profileDir: string | undefined;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Read the settings; throws naming a bad value. */
export function loadGatewayBenchConfig(env: Env = process.env): GatewayBenchConfig {
  const only = (env["BENCH_GW_ONLY"] ?? "").trim();
  const phases = only === "" ? [...GATEWAY_PHASES] : only.split(",").map((s) => s.trim());
  for (const p of phases) {
    if (!(GATEWAY_PHASES as readonly string[]).includes(p))
      throw new Error(`BENCH_GW_ONLY: unknown phase "${p}" (${GATEWAY_PHASES.join(", ")})`);
  }
  return {
    proxies: int(env, "BENCH_GW_PROXIES", 20, 1),
    latencyRounds: int(env, "BENCH_GW_LATENCY_ROUNDS", 2_000, 1),
    latencyWarmup: int(env, "BENCH_GW_LATENCY_WARMUP", 200, 0),
    clients: int(env, "BENCH_GW_CLIENTS", 200, 1),
    throughputHosts: int(env, "BENCH_GW_HOSTS", 20, 1),
    throughputSeconds: int(env, "BENCH_GW_SECONDS", 10, 1),
    throughputRounds: int(env, "BENCH_GW_ROUNDS", 3, 1),
    built: env["BENCH_GW_BUILT"] === "1",
    throughputWarmupSeconds: int(env, "BENCH_GW_WARMUP_SECONDS", 2, 0),
    keepAlive: env["BENCH_GW_KEEPALIVE"] === "1",
    tunnels: int(env, "BENCH_GW_TUNNELS", 1_000, 1),
    tunnelHosts: int(env, "BENCH_GW_TUNNEL_HOSTS", 100, 1),
    downloadBytes: int(env, "BENCH_GW_DOWNLOAD_BYTES", 2 ** 30, 1),
    downloadTtlMs: int(env, "BENCH_GW_DOWNLOAD_TTL_MS", 1_000, 1),
    poolNames: int(env, "BENCH_GW_POOL_NAMES", 500, 1),
    phases: GATEWAY_PHASES.filter((p) => phases.includes(p)),
    profileDir: env["BENCH_GW_PROFILE"] === "1" ? resolve(".bench/profiles/gateway") : undefined,
  };
}
