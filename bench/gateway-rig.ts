/**
 * Everything `npm run bench:gateway` runs against, on loopback: a fresh redis-server, one broker
 * process (production defaults, metrics on), N real tinyproxies, the HTTP site and the echo
 * service; gateway processes (crawl/gateway-process.ts) and the proxy-chain reference process
 * (bench/gateway-chain.ts) are started per phase.
 */
import { spawn } from "node:child_process";
import * as grpc from "@grpc/grpc-js";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { DomainPolicySchema } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { startGatewayProcess } from "../crawl/gateway-process.js";
import { brokerProcess } from "../test/support/broker-process.js";
import type { BrokerProcess } from "../test/support/broker-process.js";
import { freePort } from "../test/support/free-port.js";
import { tsEntryArgs } from "../test/support/node-ts.js";
import { startRedisServer } from "../test/support/redis-server.js";
import type { RedisServer } from "../test/support/redis-server.js";
import { startTinyproxies } from "../test/support/tinyproxies.js";
import type { Tinyproxies } from "../test/support/tinyproxies.js";
import type { GatewayBenchConfig } from "./gateway-config.js";
import { childPids } from "./gateway-proc.js";
import { loopbackHosts, startEcho, startSite } from "./gateway-site.js";
import type { Listeners } from "./gateway-site.js";

/** A process the bench started, with what it needs of it. */
export interface Running {
  /** `127.0.0.1:port` where clients connect. */
  readonly address: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export interface Rig {
  readonly redis: RedisServer;
  readonly broker: BrokerProcess;
  /** The broker's `/metrics` (`host:port`). */
  readonly brokerMetrics: string;
  readonly admin: ClientOf<typeof ProxyAdmin>;
  /** `127.0.0.1:port` of each tinyproxy, and its pid. */
  readonly proxies: readonly string[];
  readonly tinyproxyPids: readonly number[];
  /** The HTTP site: host 0 is the latency host, host 1 the download host, the rest the throughput hosts. */
  readonly site: Listeners;
  /** The echo service the tunnels reach. */
  readonly echo: Listeners;
  /** Put `proxies` (`host:port`) into `pool`. */
  addPool(pool: string, proxies: readonly string[]): Promise<void>;
  /** Set a domain policy of `pool`. */
  setPolicy(pool: string, policy: MessageInitShape<typeof DomainPolicySchema>): Promise<void>;
  /** A fresh gateway process whose default pool is `pool`. */
  /** A gateway process for `pool`; `env`: more of its settings (GATEWAY_*). */
  gateway(pool: string, env?: Readonly<Record<string, string>>): Promise<Running>;
  /** proxy-chain alone in its own process, chaining the requests to `upstreams` (`host:port`) in turn. */
  chain(upstreams: readonly string[]): Promise<Running>;
  close(): Promise<void>;
}

export async function startRig(config: GatewayBenchConfig): Promise<Rig> {
  const closers: Array<() => Promise<void>> = [];
  const close = async (): Promise<void> => {
    for (const c of closers.reverse()) await c().catch(() => undefined);
  };
  try {
    const redis = await startRedisServer();
    closers.push(() => redis.stop());
    const brokerMetrics = `127.0.0.1:${await freePort()}`;
    const broker = await brokerProcess({ redisUrl: redis.url, testDefaults: false, env: { METRICS_ADDRESS: brokerMetrics } });
    await broker.start();
    closers.push(() => broker.stop());
    const channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    closers.push(async () => channel.close());
    const admin = createClient(ProxyAdmin, channel);
    const tiny: Tinyproxies = await startTinyproxies({ count: config.proxies });
    closers.push(() => tiny.stop());
    const site = await startSite(loopbackHosts(2, 2 + config.throughputHosts));
    closers.push(() => site.close());
    const echo = await startEcho(loopbackHosts(3, config.tunnelHosts));
    closers.push(() => echo.close());
    return {
      redis,
      broker,
      brokerMetrics,
      admin,
      proxies: tiny.proxies.map((p) => p.address),
      tinyproxyPids: tiny.proxies.map((_, i) => tinyproxyPid(i)),
      site,
      echo,
      addPool: async (pool, proxies) => {
        const r = await admin.addProxies({ pool, proxies: proxies.map((p) => ({ url: `http://${p}`, tier: "", labels: {} })) });
        if (r.rejected.length > 0) throw new Error(`broker rejected proxies: ${r.rejected.map((x) => x.reason).join("; ")}`);
      },
      setPolicy: async (pool, policy) => {
        await admin.setDomainPolicy({ pool, policy });
      },
      gateway: (pool, env) =>
        startGateway({ brokerAddress: broker.address, pool, profileDir: config.profileDir, env: env ?? {}, built: config.built }),
      chain: (upstreams) => startChain(upstreams, config.profileDir),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The pid of tinyproxy i of test/support/tinyproxies.ts (its config is `…/p<i>/tinyproxy.conf`). */
function tinyproxyPid(i: number): number {
  const [pid] = childPids((argv) => (argv[0] ?? "").endsWith("tinyproxy") && (argv.at(-1) ?? "").endsWith(`/p${i}/tinyproxy.conf`));
  if (pid === undefined) throw new Error(`bench:gateway: tinyproxy ${i} not found among this process's children`);
  return pid;
}

/**
 * A gateway through crawl/gateway-process.ts, which passes its own environment on: the
 * gateway's pool is set in it while the process starts. (`proxybroker gateway` does not read
 * GATEWAY_METRICS_ADDRESS — the command declares no flag for it — so the bench reads the
 * broker's metrics only.)
 */
async function startGateway(opts: {
  brokerAddress: string;
  pool: string;
  profileDir: string | undefined;
  env: Readonly<Record<string, string>>;
  built: boolean;
}): Promise<Running> {
  const settings: Record<string, string> = { ...opts.env, GATEWAY_POOL: opts.pool };
  const saved = Object.fromEntries(Object.keys(settings).map((k) => [k, process.env[k]]));
  Object.assign(process.env, settings);
  try {
    const nodeArgs = opts.profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${opts.profileDir}`];
    const gw = await startGatewayProcess(opts.brokerAddress, { nodeArgs, built: opts.built });
    const [pid, ...more] = childPids(
      (argv) => (argv.includes("src/cli.ts") || argv.includes("dist/src/cli.js")) && argv.at(-1) === "gateway",
    );
    if (pid === undefined || more.length > 0) {
      await gw.stop();
      throw new Error("bench:gateway: not one gateway process among this process's children");
    }
    return { address: gw.address, pid, stop: () => gw.stop() };
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

const START_TIMEOUT_MS = 30_000;

async function startChain(upstreams: readonly string[], profileDir: string | undefined): Promise<Running> {
  const address = `127.0.0.1:${await freePort()}`;
  const nodeArgs = profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}/chain`];
  const child = spawn(process.execPath, tsEntryArgs("bench/gateway-chain.ts", nodeArgs), {
    env: { ...process.env, CHAIN_LISTEN: address, CHAIN_UPSTREAM: upstreams.map((u) => `http://${u}`).join(",") },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const killOnExit = (): void => void child.kill("SIGKILL");
  process.once("exit", killOnExit);
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`proxy-chain did not listen within ${START_TIMEOUT_MS} ms: ${out}`)), START_TIMEOUT_MS);
    const onData = (d: Buffer): void => {
      out = (out + d.toString()).slice(-4_000);
      if (out.includes("chain listening on")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`proxy-chain exited (${String(code)}): ${out}`));
    });
  });
  return {
    address,
    pid: child.pid ?? 0,
    stop: async () => {
      process.removeListener("exit", killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
