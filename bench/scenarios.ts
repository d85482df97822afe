import * as grpc from "@grpc/grpc-js";
import { Redis } from "ioredis";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { brokerProcess } from "../test/support/broker-process.js";
import { runBrokerLoops } from "./broker-loop.js";
import type { BrokerMode } from "./broker-loop.js";
import { BenchStream } from "./lease-stream.js";
import { measureWindow } from "./measure.js";
import type { Slice } from "./measure.js";
import { Meter } from "./meter.js";
import { domainNames } from "./domains.js";
import { addToBroker, addToSeedPool, proxyIds } from "./proxies.js";
import { toResult } from "./result.js";
import type { ScenarioResult, ScenarioShape } from "./result.js";
import { Seed000 } from "../test/support/seed000.js";
import { runSeedLoops } from "./seed000-loops.js";

/** A store the broker scenarios run on: one Redis, or a Redis Cluster. */
export interface StoreTarget {
  /** The broker's environment for it (REDIS_URL or REDIS_CLUSTER_NODES). */
  readonly env: Readonly<Record<string, string>>;
  /** Connections to every server that holds data (for INFO); never used by the loops. */
  readonly servers: readonly Redis[];
  /** FLUSHALL everywhere. */
  flush(): Promise<void>;
}

/** What every scenario runs against. */
export interface BenchContext {
  readonly redisUrl: string;
  /** A connection for FLUSHALL, loading and INFO; never used by the loops. */
  readonly stats: Redis;
  /** A 3-master Redis Cluster, started on first use. */
  readonly cluster: () => Promise<StoreTarget>;
  readonly warmupSeconds: number;
  readonly seconds: number;
  readonly sliceSeconds: number;
  readonly retryPauseMs: number;
}

export interface BrokerScenario extends ScenarioShape {
  readonly system: "broker";
  readonly mode: BrokerMode;
  readonly maxWaitMs: number;
  /** Broker processes (replicas on one store); the loops are split over them. Default 1. */
  readonly replicas?: number;
  /** Default "redis" (one server). */
  readonly store?: "redis" | "cluster";
  /** Pools the loops spread over (each with `proxies` proxies; on a cluster, over its masters). Default 1. */
  readonly pools?: number;
  /** Run the broker under `node --cpu-prof`, writing into this directory. */
  readonly cpuProfileDir?: string;
  /** More of the broker's settings (environment). */
  readonly env?: Readonly<Record<string, string>>;
  /** Put every domain of the scenario in this isolation group (a policy each; G8). */
  readonly isolationGroup?: string;
  /**
   * Wait this long after the policies are set before the loops start. Policies are set one at a
   * time, and for the longest lease TTL (+3 s) after each change that moves a key into a group,
   * acquires of the group also read that key's pairs; waiting past it measures the steady state.
   */
  readonly settleMs?: number;
}

export interface SeedScenario extends ScenarioShape {
  readonly system: "seed000";
}

/** A finished broker scenario and the slices it measured (the profile needs their times). */
export interface BrokerRun {
  readonly result: ScenarioResult;
  readonly slices: readonly Slice[];
}

/** The one Redis of the context as a store target. */
function singleRedis(ctx: BenchContext): StoreTarget {
  return { env: { REDIS_URL: ctx.redisUrl }, servers: [ctx.stats], flush: async () => void (await ctx.stats.flushall()) };
}

/**
 * FLUSHALL, fresh broker processes (replicas on one store), the proxies, then the loops, split
 * over one Lease stream per replica.
 */
export async function runBrokerScenario(ctx: BenchContext, sc: BrokerScenario): Promise<BrokerRun> {
  const target = sc.store === "cluster" ? await ctx.cluster() : singleRedis(ctx);
  await target.flush();
  const replicas = Math.max(1, sc.replicas ?? 1);
  const brokers = await Promise.all(
    Array.from({ length: replicas }, () =>
      brokerProcess({
        redisUrl: "",
        env: { ...target.env, ...sc.env },
        testDefaults: false,
        nodeArgs: sc.cpuProfileDir !== undefined ? ["--cpu-prof", "--cpu-prof-dir", sc.cpuProfileDir] : [],
      }),
    ),
  );
  await Promise.all(brokers.map((b) => b.start()));
  const channels = brokers.map((b) => new grpc.Client(b.address, grpc.credentials.createInsecure()));
  try {
    const pools = Array.from({ length: Math.max(1, sc.pools ?? 1) }, (_, i) => (i === 0 ? "default" : `pool${i}`));
    const admin = createClient(ProxyAdmin, channels[0]!);
    for (const pool of pools) {
      await addToBroker(admin, proxyIds(sc.proxies), pool);
      if (sc.isolationGroup !== undefined) await isolate(admin, pool, domainNames(sc.domains), sc.isolationGroup);
    }
    if (sc.settleMs !== undefined) await new Promise((r) => setTimeout(r, sc.settleMs));
    const streams = channels.map((c) => new BenchStream(createClient(ProxyBroker, c)));
    const meter = new Meter();
    const stop = { stopped: false };
    const share = Math.ceil(sc.workers / replicas);
    const loops = Promise.all(
      streams.map((stream, r) =>
        runBrokerLoops({
          stream,
          workers: Math.max(0, Math.min(share, sc.workers - r * share)),
          firstIndex: r * share,
          pools,
          domains: domainNames(sc.domains),
          mode: sc.mode,
          maxWaitMs: sc.maxWaitMs,
          retryPauseMs: ctx.retryPauseMs,
          holdMs: sc.holdMs,
          meter,
          stop,
        }),
      ),
    );
    loops.catch(() => undefined); // a failing loop is reported by `await loops` below
    const pids = brokers.map((b) => b.pid()).filter((p): p is number => p !== undefined);
    const slices = await measureWindow({ ...ctx, stats: target.servers, meter, brokerPids: pids });
    stop.stopped = true;
    await loops;
    for (const stream of streams) {
      stream.end();
      if (stream.strays > 0) process.stderr.write(`bench: ${sc.id}: ${stream.strays} answers nobody waited for\n`);
    }
    return { result: toResult(sc, slices), slices };
  } finally {
    for (const c of channels) c.close();
    await Promise.all(brokers.map((b) => b.stop()));
  }
}

/** A policy per domain that names `group` as its isolation group and sets nothing else. */
async function isolate(admin: ClientOf<typeof ProxyAdmin>, pool: string, domains: readonly string[], group: string): Promise<void> {
  for (const pattern of domains) await admin.setDomainPolicy({ pool, policy: { pattern, isolationGroup: group } });
}

/** FLUSHALL, seed 000's sorted set, then the loops on one shared ioredis connection. */
export async function runSeedScenario(ctx: BenchContext, sc: SeedScenario): Promise<ScenarioResult> {
  await ctx.stats.flushall();
  await addToSeedPool(ctx.stats, proxyIds(sc.proxies));
  const redis = new Redis(ctx.redisUrl);
  try {
    const meter = new Meter();
    const stop = { stopped: false };
    const loops = runSeedLoops({
      seed: new Seed000(redis),
      workers: sc.workers,
      domains: domainNames(sc.domains),
      retryPauseMs: ctx.retryPauseMs,
      holdMs: sc.holdMs,
      meter,
      stop,
    });
    loops.catch(() => undefined); // a failing loop is reported by `await loops` below
    const slices = await measureWindow({ ...ctx, stats: [ctx.stats], meter, brokerPids: [] });
    stop.stopped = true;
    await loops;
    return toResult(sc, slices);
  } finally {
    redis.disconnect();
  }
}
