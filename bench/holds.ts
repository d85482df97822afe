/**
 * Holds after a Redis restart or a loss, measured: `npm run bench:holds`.
 *
 * A real redis-server with an append-only file (appendfsync always) and two broker processes.
 * Leases of 2 s are cycled and one lease of 5 s is taken (the longest TTL granted), then:
 * - clean restart: Redis is shut down (SHUTDOWN, which saves), a second replica starts while it
 *   is down, Redis starts again on its file. Nothing was lost: no hold is due, and each replica
 *   should grant as soon as Redis answers.
 * - loss: FLUSHALL (the proxies are added again at once, as an operator would). The state was
 *   lost: each replica holds grants for the longest TTL granted (5 s), no longer.
 * Prints, per replica, the time from Redis answering (or the flush) to its first grant, the hold
 * it reports in GetPoolStats, and what it logged.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { durationFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { Redis } from "ioredis";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { OutcomeKind, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { brokerProcess, type BrokerProcess } from "../test/support/broker-process.js";
import { startRedisServer } from "../test/support/redis-server.js";

const SHORT_TTL_MS = 2_000;
const LONG_TTL_MS = 5_000;
const PROXIES = Array.from({ length: 6 }, (_, i) => `10.30.0.${i + 1}:3128`);
/** Give up on a first grant after this long. */
const GIVE_UP_MS = 60_000;

interface Replica {
  readonly name: string;
  readonly process: BrokerProcess;
  readonly broker: ClientOf<typeof ProxyBroker>;
  readonly admin: ClientOf<typeof ProxyAdmin>;
}

function replicaOn(name: string, process: BrokerProcess): Replica {
  const channel = new grpc.Client(process.address, grpc.credentials.createInsecure());
  return { name, process, broker: createClient(ProxyBroker, channel), admin: createClient(ProxyAdmin, channel) };
}

let probes = 0;

/** Grant and release one lease through `r`, on a fresh domain (no pacing in the way). */
async function cycle(r: Replica, ttlMs = SHORT_TTL_MS): Promise<void> {
  const domain = `probe-${probes++}.example`;
  const l = (await r.broker.acquireLease({ workerId: `bench-${r.name}`, domain, ttl: durationFromMs(ttlMs) })).lease!;
  await r.broker.releaseLease({ leaseId: l.leaseId, fencingToken: l.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } });
}

/** Time from `since` to the first grant through `r` (polling every 20 ms), and the codes refused meanwhile. */
async function firstGrant(r: Replica, since: number): Promise<{ ms: number; refusals: Map<string, number> }> {
  const refusals = new Map<string, number>();
  for (;;) {
    try {
      await cycle(r);
      return { ms: Date.now() - since, refusals };
    } catch (err) {
      const code = grpc.status[(err as { code?: number }).code ?? grpc.status.UNKNOWN] ?? "UNKNOWN";
      refusals.set(code, (refusals.get(code) ?? 0) + 1);
      if (Date.now() - since > GIVE_UP_MS) return { ms: Number.NaN, refusals };
      await new Promise((res) => setTimeout(res, 20));
    }
  }
}

/** The hold a replica reports now: ms until its grants are released (0: none). */
async function heldFor(r: Replica): Promise<number> {
  const stats = await r.admin.getPoolStats({});
  return stats.grantsHeldUntil === undefined ? 0 : Math.max(0, timestampMs(stats.grantsHeldUntil) - Date.now());
}

/** The lines a replica logged about lost state or a changed server. */
function lossLines(r: Replica): string[] {
  return r.process
    .output()
    .split("\n")
    .filter((l) => /lost the state|server changed|grants held/i.test(l));
}

function describeRefusals(m: Map<string, number>): string {
  return m.size === 0 ? "none" : [...m].map(([code, n]) => `${n} × ${code}`).join(", ");
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "pb-holds-"));
  tempDir = dir;
  const redis = await startRedisServer({ persistence: { dir, appendfsync: "always" } });
  stopRedis = () => redis.stop();
  await writeFile(join(dir, "proxies.txt"), `${PROXIES.join("\n")}\n`);
  const env = { PROXIES_FILE: join(dir, "proxies.txt") };
  const a = replicaOn("a", await brokerProcess({ redisUrl: redis.url, env, testDefaults: false }));
  const b = replicaOn("b", await brokerProcess({ redisUrl: redis.url, env, testDefaults: false }));
  stopBrokers = async () => {
    await a.process.stop();
    await b.process.stop();
  };
  await a.process.start();
  const db = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 100 });
  db.on("error", () => undefined);

  const grantSome = async (r: Replica): Promise<void> => {
    for (let i = 0; i < 5; i++) await cycle(r);
    // one longer lease, left to run out: the longest TTL granted
    await r.broker.acquireLease({ workerId: "long", domain: "long.example", ttl: durationFromMs(LONG_TTL_MS) });
  };

  // 1. clean restart, a replica starting while Redis is down
  await grantSome(a);
  await db.connect();
  await db.call("SHUTDOWN").catch(() => undefined);
  db.disconnect();
  await redis.exited();
  const bStarted = b.process.start();
  await new Promise((res) => setTimeout(res, 2_000));
  await redis.restart();
  const upAt = Date.now();
  await bStarted;
  const restart = await Promise.all([a, b].map((r) => firstGrant(r, upAt)));
  const restartHeld = await Promise.all([a, b].map(heldFor));
  const restartLines = [a, b].map((r) => lossLines(r).length);
  console.log(`clean restart (AOF, appendfsync always), replica b started while Redis was down; longest TTL granted ${LONG_TTL_MS} ms`);
  [a, b].forEach((r, i) => {
    const got = restart[i]!;
    console.log(
      `  replica ${r.name}: first grant ${got.ms} ms after Redis answered; refused meanwhile: ${describeRefusals(got.refusals)}; ` +
        `hold in GetPoolStats ${restartHeld[i]} ms; loss/server-change log lines ${restartLines[i]}`,
    );
  });

  // 2. a real loss: FLUSHALL
  await grantSome(a);
  await grantSome(b);
  await db.connect();
  await db.flushall();
  const flushedAt = Date.now();
  await a.admin.addProxies({ proxies: PROXIES.map((url) => ({ url })) });
  const loss = await Promise.all([a, b].map((r) => firstGrant(r, flushedAt)));
  console.log(`FLUSHALL (proxies added again at once); longest TTL granted ${LONG_TTL_MS} ms`);
  [a, b].forEach((r, i) => {
    const got = loss[i]!;
    const lines = lossLines(r).slice(restartLines[i]);
    console.log(
      `  replica ${r.name}: first grant ${got.ms} ms after the flush (${(got.ms / LONG_TTL_MS).toFixed(2)}× the longest TTL); ` +
        `refused meanwhile: ${describeRefusals(got.refusals)}; log: ${lines.length} line(s)${lines[0] === undefined ? "" : ` — ${lines[0].trim().slice(0, 160)}`}`,
    );
  });
  db.disconnect();
}

let tempDir: string | undefined;
let stopRedis: (() => Promise<void>) | undefined;
let stopBrokers: (() => Promise<void>) | undefined;

try {
  await main();
} finally {
  await stopBrokers?.();
  await stopRedis?.();
  if (tempDir !== undefined) await rm(tempDir, { recursive: true, force: true });
}
