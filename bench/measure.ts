import type { Redis } from "ioredis";
import type { Counts, Meter } from "./meter.js";
import { machineBusyUs, ownCpuUs, processCpuUs } from "./process-cpu.js";
import { redisDelta, sampleRedis } from "./redis-stats.js";
import type { RedisDelta, RedisSample } from "./redis-stats.js";
import { pause } from "./pause.js";

/** One slice of a measurement window: the loops' counts and what each process spent. */
export interface Slice extends Counts {
  readonly redis: RedisDelta;
  /** CPU of this process (the load generator), µs. */
  readonly clientCpuUs: number;
  /** CPU of the broker process, µs (NaN without a broker). */
  readonly brokerCpuUs: number;
  /** CPU used by every other process of the machine meanwhile, µs (machine − ours). */
  readonly othersCpuUs: number;
  /** The slice on the monotonic clock, µs (as V8 CPU profiles count time). */
  readonly startUs: number;
  readonly endUs: number;
}

export interface MeasureOptions {
  readonly meter: Meter;
  /** Connections that the loops do not use, for INFO: the Redis, or every master of a cluster. */
  readonly stats: readonly Redis[];
  /** The broker processes (none for the seed). */
  readonly brokerPids: readonly number[];
  readonly warmupSeconds: number;
  readonly seconds: number;
  readonly sliceSeconds: number;
}

interface Readings {
  readonly redis: RedisSample;
  readonly client: number;
  readonly broker: number;
  readonly machine: number;
  readonly monotonic: number;
}

async function read(opts: MeasureOptions): Promise<Readings> {
  const redis = await sampleRedis(opts.stats);
  return {
    redis,
    client: ownCpuUs(),
    broker: opts.brokerPids.length === 0 ? Number.NaN : opts.brokerPids.reduce((sum, pid) => sum + processCpuUs(pid), 0),
    machine: machineBusyUs(),
    monotonic: Number(process.hrtime.bigint() / 1000n),
  };
}

/**
 * Let the running loops warm up, then measure `seconds` in back-to-back slices of about
 * `sliceSeconds` (so that a burst of load from other processes can be told apart).
 */
export async function measureWindow(opts: MeasureOptions): Promise<Slice[]> {
  await pause(opts.warmupSeconds * 1000);
  const count = Math.max(1, Math.round(opts.seconds / opts.sliceSeconds));
  const slices: Slice[] = [];
  let before = await read(opts);
  opts.meter.begin();
  for (let i = 0; i < count; i++) {
    await pause((opts.seconds / count) * 1000);
    const counts = opts.meter.take();
    const after = await read(opts);
    const redis = redisDelta(before.redis, after.redis);
    const client = after.client - before.client;
    const broker = after.broker - before.broker;
    const ours = redis.cpuUs + client + (Number.isNaN(broker) ? 0 : broker);
    slices.push({
      ...counts,
      redis,
      clientCpuUs: client,
      brokerCpuUs: broker,
      othersCpuUs: Math.max(0, after.machine - before.machine - ours),
      startUs: before.monotonic,
      endUs: after.monotonic,
    });
    before = after;
  }
  opts.meter.end();
  return slices;
}
