import * as grpc from "@grpc/grpc-js";
import { Redis } from "ioredis";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
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

/** What every scenario runs against. */
export interface BenchContext {
  readonly redisUrl: string;
  /** A connection for FLUSHALL, loading and INFO; never used by the loops. */
  readonly stats: Redis;
  readonly warmupSeconds: number;
  readonly seconds: number;
  readonly sliceSeconds: number;
  readonly retryPauseMs: number;
}

export interface BrokerScenario extends ScenarioShape {
  readonly system: "broker";
  readonly mode: BrokerMode;
  readonly maxWaitMs: number;
  /** Run the broker under `node --cpu-prof`, writing into this directory. */
  readonly cpuProfileDir?: string;
}

export interface SeedScenario extends ScenarioShape {
  readonly system: "seed000";
}

/** A finished broker scenario and the slices it measured (the profile needs their times). */
export interface BrokerRun {
  readonly result: ScenarioResult;
  readonly slices: readonly Slice[];
}

/** FLUSHALL, a fresh broker process, the proxies, then the loops through one Lease stream. */
export async function runBrokerScenario(ctx: BenchContext, sc: BrokerScenario): Promise<BrokerRun> {
  await ctx.stats.flushall();
  const broker = await brokerProcess({
    redisUrl: ctx.redisUrl,
    testDefaults: false,
    nodeArgs: sc.cpuProfileDir !== undefined ? ["--cpu-prof", "--cpu-prof-dir", sc.cpuProfileDir] : [],
  });
  await broker.start();
  const channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
  try {
    await addToBroker(createClient(ProxyAdmin, channel), proxyIds(sc.proxies));
    const stream = new BenchStream(createClient(ProxyBroker, channel));
    const meter = new Meter();
    const stop = { stopped: false };
    const loops = runBrokerLoops({
      stream,
      workers: sc.workers,
      domains: domainNames(sc.domains),
      mode: sc.mode,
      maxWaitMs: sc.maxWaitMs,
      retryPauseMs: ctx.retryPauseMs,
      holdMs: sc.holdMs,
      meter,
      stop,
    });
    loops.catch(() => undefined); // a failing loop is reported by `await loops` below
    const slices = await measureWindow({ ...ctx, meter, brokerPid: broker.pid() });
    stop.stopped = true;
    await loops;
    stream.end();
    if (stream.strays > 0) process.stderr.write(`bench: ${sc.id}: ${stream.strays} answers nobody waited for\n`);
    return { result: toResult(sc, slices), slices };
  } finally {
    channel.close();
    await broker.stop();
  }
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
    const slices = await measureWindow({ ...ctx, meter, brokerPid: undefined });
    stop.stopped = true;
    await loops;
    return toResult(sc, slices);
  } finally {
    redis.disconnect();
  }
}
