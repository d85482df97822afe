/**
 * `npm run soak`: 1,000 concurrent Lease streams with churn against one broker process on a fresh
 * redis-server, for SOAK_SECONDS (600). Each stream runs one loop — acquire (max_wait 1 s), hold
 * 20–200 ms, release — and every second 2 % of the streams end and as many new ones start with
 * new worker ids (workers come and go). Every SOAK_SAMPLE_SECONDS (30) it prints the broker's RSS
 * and heap, Redis's used memory and key count, and the cycles per second; at the end the memory at
 * the start, the middle and the end, and whether it stayed flat. Not part of CI.
 */
import * as grpc from "@grpc/grpc-js";
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { brokerProcess, freePort } from "../test/support/broker-process.js";
import { startRedisServer } from "../test/support/redis-server.js";
import { seededRandom } from "../test/support/fake-clock.js";
import { BenchStream, maxWaitOf } from "./lease-stream.js";
import { addToBroker, proxyIds } from "./proxies.js";
import { pause } from "./pause.js";
import { recordsLine } from "../crawl/records-line.js";

const env = process.env;
const SECONDS = Number(env["SOAK_SECONDS"] ?? 600);
const SAMPLE_SECONDS = Number(env["SOAK_SAMPLE_SECONDS"] ?? 30);
const STREAMS = Number(env["SOAK_STREAMS"] ?? 1_000);
const CHURN = Number(env["SOAK_CHURN"] ?? 0.02);
const PROXIES = Number(env["SOAK_PROXIES"] ?? 2_000);
const DOMAINS = Number(env["SOAK_DOMAINS"] ?? 50);
/** Streams per connection (the broker's MAX_STREAMS_PER_CONNECTION is 100). */
const PER_CHANNEL = 50;

interface Sample {
  readonly at: number;
  readonly rssMb: number;
  readonly heapMb: number;
  readonly redisMb: number;
  readonly keys: number;
  readonly cyclesPerSec: number;
}

function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
}

async function main(): Promise<void> {
  const redis = await startRedisServer();
  const stats = new Redis(redis.url);
  const metricsPort = await freePort();
  const broker = await brokerProcess({ redisUrl: redis.url, testDefaults: false, env: { METRICS_ADDRESS: `127.0.0.1:${metricsPort}` } });
  await broker.start();
  const channels = Array.from(
    { length: Math.ceil(STREAMS / PER_CHANNEL) + 2 },
    () => new grpc.Client(broker.address, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 }),
  );
  const random = seededRandom(20261201);
  let cycles = 0;
  let errors = 0;
  let generation = 0;
  let stopping = false;
  const maxWait = maxWaitOf(1_000);
  try {
    await addToBroker(createClient(ProxyAdmin, channels[0]!), proxyIds(PROXIES));
    /** One stream with one loop until `ended`; resolves when its stream is closed. */
    const session = async (slot: number, ended: { stop: boolean }): Promise<void> => {
      const workerId = `soak-${slot}-${++generation}`;
      const stream = new BenchStream(createClient(ProxyBroker, channels[slot % channels.length]!));
      try {
        while (!ended.stop && !stopping) {
          const a = await stream.acquire({ workerId, domain: `site${Math.floor(random() * DOMAINS)}.example`, maxWait });
          if (!a.ok) continue;
          await pause(20 + random() * 180);
          const r = await stream.release(a.lease);
          if (r.released) cycles++;
          else errors++;
        }
      } catch {
        errors++;
      } finally {
        stream.end();
      }
    };
    const slots = Array.from({ length: STREAMS }, (_, i) => {
      const flag = { stop: false };
      return { flag, done: session(i, flag) };
    });
    const churn = setInterval(() => {
      for (let i = 0; i < STREAMS * CHURN; i++) {
        const slot = Math.floor(random() * STREAMS);
        const s = slots[slot]!;
        s.flag.stop = true;
        const flag = { stop: false };
        slots[slot] = { flag, done: s.done.then(() => session(slot, flag)) };
      }
    }, 1_000);
    const samples: Sample[] = [];
    const started = Date.now();
    let lastCycles = 0;
    while (Date.now() - started < SECONDS * 1000) {
      await pause(Math.min(SAMPLE_SECONDS * 1000, SECONDS * 1000 - (Date.now() - started)));
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const heap = Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(metrics)?.[1] ?? 0) / 2 ** 20;
      const mem = await stats.info("memory");
      const sample: Sample = {
        at: (Date.now() - started) / 1000,
        rssMb: rssMb(broker.pid()!),
        heapMb: heap,
        redisMb: Number(/used_memory:(\d+)/.exec(mem)?.[1] ?? 0) / 2 ** 20,
        keys: await stats.dbsize(),
        cyclesPerSec: (cycles - lastCycles) / SAMPLE_SECONDS,
      };
      lastCycles = cycles;
      samples.push(sample);
      say(
        `soak: ${sample.at.toFixed(0)} s: broker RSS ${sample.rssMb.toFixed(0)} MB, heap ${sample.heapMb.toFixed(0)} MB; Redis ${sample.redisMb.toFixed(1)} MB, ${sample.keys} keys; ${sample.cyclesPerSec.toFixed(0)} cycles/s; ${errors} errors; ${generation} streams opened`,
      );
      if (!broker.alive()) throw new Error(`the broker exited: ${broker.output().slice(-1000)}`);
    }
    clearInterval(churn);
    stopping = true;
    await Promise.all(slots.map((s) => s.done));
    const first = samples[0];
    const middle = samples[Math.floor((samples.length - 1) / 2)];
    const last = samples[samples.length - 1];
    if (first === undefined || middle === undefined || last === undefined) throw new Error("no samples");
    const line = (label: string, s: Sample) =>
      `  ${label.padEnd(6)} ${s.at.toFixed(0).padStart(5)} s  broker RSS ${s.rssMb.toFixed(0).padStart(4)} MB  heap ${s.heapMb.toFixed(0).padStart(4)} MB  Redis ${s.redisMb.toFixed(1).padStart(6)} MB  ${String(s.keys).padStart(7)} keys  ${s.cyclesPerSec.toFixed(0).padStart(6)} cycles/s`;
    process.stdout.write(
      [
        "",
        `soak: ${STREAMS} streams, ${(CHURN * 100).toFixed(0)} % replaced every second (${generation} opened in all), ${PROXIES} proxies, ${DOMAINS} domains, ${SECONDS} s; ${errors} errors`,
        line("start", first),
        line("middle", middle),
        line("end", last),
        `  broker heap end/start ${(last.heapMb / first.heapMb).toFixed(2)}×, RSS end/middle ${(last.rssMb / middle.rssMb).toFixed(2)}×; Redis memory end/start ${(last.redisMb / first.redisMb).toFixed(2)}×, end/middle ${(last.redisMb / middle.redisMb).toFixed(2)}×`,
        "  (Redis fills for the first minute: the request log keeps each acquire 60 s; pairs appear as proxies meet domains)",
        "",
      ].join("\n"),
    );
  } finally {
    for (const c of channels) c.close();
    await broker.stop();
    stats.disconnect();
    await redis.stop();
  }
}

process.on("SIGINT", () => process.exit(130));
// Its redis-server's directory is temporary, removed at the stop: nothing is left behind.
main().then(
  () => process.stdout.write(`${recordsLine("soak", [])}\n`),
  (err: unknown) => {
    say(`soak failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.stdout.write(`${recordsLine("soak", [])}\n`);
    process.exit(1);
  },
);
