/**
 * `npm run bench:instructions`: what one lease cycle costs Redis in instructions (callgrind), for
 * seed 000 and for the broker's store, batched and one call per operation. Instruction counts
 * repeat to a fraction of a percent on a busy shared machine, where CPU seconds vary by half: use
 * it to compare two versions of the scripts. It counts redis-server's own instructions only (no
 * kernel time, no network); the store runs in this process, without the broker's gRPC hop.
 */
import { Redis } from "ioredis";
import { DEFAULT_SCORING, type AcquireParams, type AcquireResult } from "@proxybroker/sdk/model";
import { createRedisClient, RedisStore } from "../src/store/redis/index.js";
import { Seed000 } from "../test/support/seed000.js";
import { addToSeedPool, proxyIds } from "./proxies.js";
import { startCallgrindRedis, type CallgrindRedis } from "./callgrind-redis.js";
import { int } from "./config.js";
import { recordsLine } from "../crawl/records-line.js";

const setting = (name: string, def: number): number => int(process.env, name, def, 1);

const CYCLES = setting("BENCH_IR_CYCLES", 400);
const WARMUP = setting("BENCH_IR_WARMUP", 100);
const WORKERS = setting("BENCH_IR_WORKERS", 20);
const PROXIES = setting("BENCH_IR_PROXIES", 200);
const DOMAINS = setting("BENCH_IR_DOMAINS", 10);
const SUCCESS = { kind: "SUCCESS", httpStatus: 200, latencyMs: 10, retryAfterMs: 0 } as const;

/** `loops` loops, together `cycles` cycles at least; answers how many they did. */
async function loops(cycles: number, one: (w: number, i: number) => Promise<boolean>): Promise<number> {
  let done = 0;
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      for (let i = 0; done < cycles; i++) if (await one(w, i)) done++;
    }),
  );
  return done;
}

/** Instructions per cycle of `one`: a warm-up, then CYCLES cycles counted. */
async function perCycle(redis: CallgrindRedis, one: (w: number, i: number) => Promise<boolean>): Promise<number> {
  await loops(WARMUP, one);
  let done = 0;
  const ir = await redis.count(async () => {
    done = await loops(CYCLES, one);
  });
  return ir / done;
}

async function seedRun(redis: CallgrindRedis): Promise<number> {
  const client = new Redis(redis.url, { commandTimeout: 60_000 });
  try {
    await client.flushall();
    await addToSeedPool(client, proxyIds(PROXIES));
    const seed = new Seed000(client);
    const one = async (w: number, i: number) => {
      const domain = `d${(w + i) % DOMAINS}.example`;
      const addr = await seed.borrow(domain, `w${w}`);
      if (addr === undefined) return false;
      await seed.giveBack(addr, domain, "success");
      return true;
    };
    return await perCycle(redis, one);
  } finally {
    client.disconnect();
  }
}

/** The store's loop, batched up to `maxBatch`, its proxies added at `initialScore`. */
async function storeRun(redis: CallgrindRedis, maxBatch: number, initialScore = DEFAULT_SCORING.initialScore): Promise<number> {
  const admin = new Redis(redis.url, { commandTimeout: 60_000 });
  await admin.flushall();
  admin.disconnect();
  let s = 7;
  const random = () => {
    s = (s * 16_807) % 2_147_483_647;
    return s / 2_147_483_647;
  };
  const store = new RedisStore({
    client: createRedisClient({ url: redis.url, commandTimeoutMs: 60_000 }),
    scoring: { ...DEFAULT_SCORING, initialScore },
    maxBatch,
    random,
    workerRefreshMs: 1_000,
  });
  try {
    await store.addProxies(
      "default",
      proxyIds(PROXIES).map((id) => ({ id, url: `http://${id}`, tier: "", labels: {} })),
    );
    await store.ensureEpoch("default", { expected: "", holdMs: 0, lost: false });
    const version = (await store.listPolicies("default")).version;
    const params = (w: number, i: number): AcquireParams => ({
      pool: "default",
      domainKey: `d${(w + i) % DOMAINS}.example`,
      workerId: `w${w}`,
      ttlMs: 30_000,
      maxConcurrency: 1,
      minIntervalMs: 0,
      pacing: "release",
      jitterMs: 0,
      adaptive: true,
      maxIntervalMs: 60_000,
      shadowKeys: [],
      requestId: `r${w}-${i}`,
      proxyId: "",
      banTtlMs: 3_600_000,
      policyVersion: version,
      sessionKey: "",
      sessionTtlMs: 600_000,
      tier: "",
      labels: {},
    });
    // each loop holds one lease and releases it with the next acquire
    const held = new Map<number, AcquireResult>();
    const one = async (w: number, i: number) => {
      const r = held.get(w);
      if (r?.kind !== "granted") {
        held.set(w, await store.acquire(params(w, i)));
        return false;
      }
      const rel = await store.release({
        leaseId: r.lease.leaseId,
        fencingToken: r.lease.fencingToken,
        outcome: SUCCESS,
        next: params(w, i),
      });
      held.set(w, rel.next ?? { kind: "denied", retryAfterMs: 0 });
      return true;
    };
    return await perCycle(redis, one);
  } finally {
    await store.close();
  }
}

const redis = await startCallgrindRedis();
try {
  process.stdout.write(
    `bench:instructions: redis-server under callgrind; W ${WORKERS} loops, P ${PROXIES}, D ${DOMAINS}, ${CYCLES} cycles each\n`,
  );
  const seed = await seedRun(redis);
  const batched = await storeRun(redis, 32);
  const alone = await storeRun(redis, 1);
  // a fleet's good proxies sit at the top score, where a SUCCESS moves no index
  const top = await storeRun(redis, 32, DEFAULT_SCORING.maxScore);
  const row = (label: string, ir: number) =>
    `  ${label.padEnd(52)} ${Math.round(ir).toLocaleString("en-US").padStart(9)} instructions/cycle  ${(ir / seed).toFixed(2)}× seed 000\n`;
  process.stdout.write(row("seed 000 (borrow, give back)", seed));
  process.stdout.write(row("store, release-and-next, batched (REDIS_BATCH_MAX 32)", batched));
  process.stdout.write(row("store, release-and-next, one call each (1)", alone));
  process.stdout.write(row("store, batched, scores at the top (100)", top));
} finally {
  await redis.stop();
  // callgrind's own output lives in a temporary directory that the stop removes
  process.stdout.write(`${recordsLine("bench:instructions", redis.kept, "set BENCH_IR_KEEP to keep the callgrind dumps")}\n`);
}
