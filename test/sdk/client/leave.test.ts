import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { StreamClient } from "../../support/stream-client.js";
import { NoProxyAvailableError, ProxyBrokerClient } from "@proxybroker/sdk";
import type { Lease } from "@proxybroker/sdk";
import { brokerProcess } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { startRedisServer } from "../../support/redis-server.js";
import type { RedisServer } from "../../support/redis-server.js";

const PROXIES = Array.from({ length: 12 }, (_, i) => `127.0.0.1:${41_000 + i}`);
const ABSENT_MS = 1_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A worker that closes its client leaves the pool (LeavePool): the broker reserves no fallback
 * share for it, so a fleet restarted with new worker ids gets the whole pool at once — while the
 * share of a worker that just went silent stays reserved (it may be leasing from its fallback
 * pool). A real broker process on a real redis-server, with the default fallback window (10 min).
 */
describe("ProxyBrokerClient.close: leaving the pool", () => {
  let redis: RedisServer;
  let broker: BrokerProcess;
  let dir: string;
  let raw: grpc.Client;

  const newClient = (workerId: string) =>
    new ProxyBrokerClient({
      address: broker.address,
      workerId,
      breaker: { callTimeoutMs: 1_000 },
      fallback: { snapshotRefreshMs: 200, membershipRefreshMs: 200 },
    });

  /** How many of the pool's proxies `client` gets for one domain now (all held until released). */
  const grab = async (client: ProxyBrokerClient, domain: string): Promise<Lease[]> => {
    const got: Lease[] = [];
    for (let i = 0; i < PROXIES.length; i++) {
      try {
        got.push(await client.acquire(domain, { maxWaitMs: 0 }));
      } catch (err) {
        if (!(err instanceof NoProxyAvailableError)) throw err;
      }
    }
    return got;
  };

  beforeAll(async () => {
    redis = await startRedisServer();
    dir = await mkdtemp(join(tmpdir(), "pb-leave-"));
    await writeFile(join(dir, "proxies.txt"), PROXIES.join("\n"));
    broker = await brokerProcess({
      redisUrl: redis.url,
      env: { PROXIES_FILE: join(dir, "proxies.txt"), WORKER_ABSENT_AFTER_MS: String(ABSENT_MS) },
    });
    await broker.start();
    raw = new grpc.Client(broker.address, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    raw.close();
    await broker.stop();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("a closed worker's share is free at once; a silent one's stays reserved until it leaves", async () => {
    // the first fleet: one worker that keeps a fallback pool, works, and closes
    const first = newClient("fleet-1-worker");
    const held = await grab(first, "a.example"); // its acquires say it keeps a fallback pool
    expect(held).toHaveLength(PROXIES.length);
    const alsoB = await grab(first, "b.example");
    await sleep(300);
    await first.close();
    expect(alsoB).toHaveLength(PROXIES.length);

    // a silent worker that keeps a fallback pool: its pings claimed its share of b.example (its
    // lists showed the first worker on it), the broker acknowledged the claim, then it went quiet
    const mark = broker.output().length;
    const stub = createClient(ProxyBroker, raw);
    const ghost = new StreamClient(stub);
    const hello = await ghost.ping({ pool: "default", workerId: "ghost", fallbackPool: true });
    const claim = {
      version: 1n,
      members: ["fleet-1-worker", "ghost"],
      keys: [{ domain: "b.example", shareKey: "b.example", whole: false, untilTime: timestampFromMs(Date.now() + 600_000) }],
    };
    const heardTime = hello.case === "pong" ? hello.value.time : undefined;
    const acked = await ghost.ping({ pool: "default", workerId: "ghost", fallbackPool: true, heardTime, claim });
    expect(acked.case === "pong" && acked.value.claimVersion).toBe(1n);
    const ackedAt = Date.now();
    ghost.cancel();

    // the next fleet, under a new worker id, once the broker has counted both as absent
    const next = newClient("fleet-2-worker");
    await sleep(ABSENT_MS + 1_500);
    // the broker's reservations pass runs every second: wait for the one that reserved the ghost's
    // share for b.example (a pass may come before the broker read the ghost's use of it, which it
    // reads at most once a second: the share is then reserved for no domain-key yet)
    const reservedForGhost = () =>
      broker
        .output()
        .slice(mark)
        .split("\n")
        .some(
          (line) =>
            /"workerId":"ghost",("heardAgoMs":\d+,)?"proxies":[1-9]\d*,"scope":\["b\.example"\]/.test(line) &&
            line.includes('"msg":"pool default: reserved for'),
        );
    await expect.poll(reservedForGhost, { timeout: 10_000 }).toBe(true);
    // until half a second before the ghost's fallback may serve its claim (its last pong + 7.5 s), the
    // claim is granted to SDK workers for that gap only (spec §7): look once it holds for everybody
    await sleep(Math.max(0, ackedAt + 7_100 - Date.now()));
    const got = await grab(next, "b.example");
    // the ghost's share (over the workers live at its last contact) is reserved; the closed worker's is not
    // (on a failure, what the broker said of the ghost since it appeared)
    const said = () =>
      broker
        .output()
        .slice(mark)
        .split("\n")
        .filter((line) => line.includes("ghost"))
        .join("\n");
    expect(got.length, said()).toBeGreaterThan(0);
    expect(got.length, said()).toBeLessThan(PROXIES.length);
    await Promise.all(got.map((l) => l.release({ kind: "SUCCESS" })));
    // only for the domain-keys the ghost may lease in fallback (those it is listed with)
    const elsewhere = await grab(next, "d.example");
    expect(elsewhere).toHaveLength(PROXIES.length);
    await Promise.all(elsewhere.map((l) => l.release({ kind: "SUCCESS" })));

    // the ghost leaves too: its share is free a few seconds later (the reservations' lift delay)
    expect((await stub.leavePool({ pool: "default", workerId: "ghost" })).left).toBe(true);
    await sleep(3_000 + 1_500);
    const all = await grab(next, "c.example");
    expect(all).toHaveLength(PROXIES.length);
    await next.close();
  }, 30_000);

  it("refuses a leave without a worker id, and leaves nothing behind for a pool without proxies", async () => {
    const stub = createClient(ProxyBroker, raw);
    await expect(stub.leavePool({ pool: "default", workerId: "" })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    await expect(stub.leavePool({ pool: "bad pool", workerId: "w" })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect((await stub.leavePool({ pool: "invented", workerId: "w" })).left).toBe(false);
    const db = new Redis(redis.url);
    try {
      expect(await db.keys("*invented*")).toEqual([]);
    } finally {
      db.disconnect();
    }
  });
});
