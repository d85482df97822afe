import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import type { ClientOptions } from "@proxybroker/sdk";
import { OutcomeKind, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { fallbackReadyFor } from "../../support/fallback-ready.js";
import { brokerProcess } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { startRedisServer } from "../../support/redis-server.js";
import type { RedisServer } from "../../support/redis-server.js";
import { startTcpRelay } from "../../support/tcp-relay.js";
import type { TcpRelay } from "../../support/tcp-relay.js";

const PROXIES = Array.from({ length: 6 }, (_, i) => `10.6.0.${i + 1}:3128`);
/** Long enough that a pair the broker keeps for it stays closed for the whole test. */
const LONG_TTL_MS = 30_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * What a worker owes the broker after a fault — releases it never heard, grants whose answer
 * never arrived — is settled as soon as the broker answers again, so that no pair stays closed
 * for a whole lease TTL (a broker process on a real redis-server, real gRPC, a broker SIGKILLed, a
 * relay that loses the broker's answers).
 */
describe("what a worker owes the broker", () => {
  let redis: RedisServer;
  let broker: BrokerProcess;
  let dir: string;
  const clients: ProxyBrokerClient[] = [];
  const relays: TcpRelay[] = [];

  const client = (address: string, workerId: string, extra: Partial<ClientOptions> = {}) => {
    const c = new ProxyBrokerClient({
      address,
      workerId,
      breaker: { callTimeoutMs: 1_000, resetTimeoutMs: 300, volumeThreshold: 1 },
      fallback: { snapshotRefreshMs: 200, membershipRefreshMs: 200 },
      ...extra,
    });
    clients.push(c);
    return c;
  };
  /** How many proxies `workerId` gets for `domain` at once (waiting up to 1 s for each: pacing); given back after. */
  const grantsFor = async (domain: string, workerId: string): Promise<number> => {
    const ch = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    const stub = createClient(ProxyBroker, ch);
    const got: { leaseId: string; fencingToken: bigint }[] = [];
    try {
      for (let i = 0; i < PROXIES.length; i++) {
        const lease = await stub
          .acquireLease({ pool: "default", workerId, domain, ttl: { seconds: 10n, nanos: 0 }, maxWait: { seconds: 1n, nanos: 0 } })
          .then(
            (r) => r.lease,
            () => undefined,
          );
        if (lease === undefined) break;
        got.push(lease);
      }
      for (const l of got)
        await stub.releaseLease({ leaseId: l.leaseId, fencingToken: l.fencingToken, outcome: { kind: OutcomeKind.ABANDONED } });
    } finally {
      ch.close();
    }
    return got.length;
  };

  beforeAll(async () => {
    redis = await startRedisServer();
    dir = await mkdtemp(join(tmpdir(), "pb-owed-"));
    await writeFile(join(dir, "proxies.txt"), PROXIES.join("\n"));
    broker = await brokerProcess({
      redisUrl: redis.url,
      env: { PROXIES_FILE: join(dir, "proxies.txt"), FALLBACK_WINDOW_MS: "1000", LEASE_TTL_DEFAULT_MS: "1000" },
    });
    await broker.start();
  });
  afterAll(async () => {
    await broker.stop();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(relays.splice(0).map((r) => r.close()));
    await broker.start();
  });

  it("releases that could not reach a killed broker are delivered when it is back: their pairs are free long before their TTL", async () => {
    const c = client(broker.address, "owes-releases");
    await fallbackReadyFor(c, ["released.example"]);
    const held = await Promise.all(PROXIES.map(() => c.acquire("https://released.example/", { ttlMs: LONG_TTL_MS })));
    await broker.kill();
    for (const l of held) await l.release({ kind: "SUCCESS" });
    // their outcomes are not buffered for replay: they go with the releases
    expect(c.fallback.bufferedOutcomes).toBe(0);
    await broker.start();
    await expect
      .poll(
        async () => {
          const l = await c.acquire("https://back.example/", { heartbeat: false, maxWaitMs: 200 }).catch(() => undefined);
          await l?.release({ kind: "ABANDONED" });
          return l?.source;
        },
        { timeout: 5_000, interval: 50 },
      )
      .toBe("broker");
    // the broker keeps this worker's reservations a while after it is back: ask as the worker
    await expect.poll(() => grantsFor("released.example", "owes-releases"), { timeout: 5_000, interval: 200 }).toBe(PROXIES.length);
  });

  it("a grant whose answer was lost with the stream is asked for again and given back", async () => {
    const relay = await startTcpRelay(broker.address);
    relays.push(relay);
    const c = client(relay.address, "owes-recall");
    await fallbackReadyFor(c, ["recalled.example"]);
    // the broker hears the acquire and grants it; its answer never arrives
    relay.muteServer();
    const pending = c.acquire("https://recalled.example/", { ttlMs: LONG_TTL_MS, maxWaitMs: 5_000 });
    pending.catch(() => undefined);
    await expect.poll(() => grantsFor("recalled.example", "other"), { timeout: 2_000, interval: 100 }).toBe(PROXIES.length - 1);
    // the connection breaks (as when a broker process dies), and the network is back
    relay.heal();
    relay.reset();
    const lease = await pending;
    await lease.release({ kind: "ABANDONED" });
    await sleep(100);
    // every pair is free again: the lost grant was recalled and given back, not left to its TTL
    await expect.poll(() => grantsFor("recalled.example", "other"), { timeout: 5_000, interval: 200 }).toBe(PROXIES.length);
  });
});
