/**
 * The broker on Redis with Sentinel (a master, a replica, three Sentinels), as a real process
 * started with REDIS_SENTINELS: it finds the master through the Sentinels, follows a failover by
 * itself when the master is SIGKILLed, and holds grants after it (the promoted replica may have
 * missed the last writes), and with Sentinel auth and master auth it connects only with both.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { brokerProcess } from "../../../support/broker-process.js";
import { exclusivityBreaches, startFailoverLoad } from "../../../support/failover-load.js";
import { startRedisSentinel, type RedisSentinelSet } from "../../../support/redis-sentinel.js";

const TTL_MS = 1_000;

let set: RedisSentinelSet;

beforeAll(async () => {
  set = await startRedisSentinel({ downAfterMs: 500 });
}, 60_000);

afterAll(async () => {
  await set?.stop();
});

function proxiesFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "pb-sentinel-broker-"));
  const file = join(dir, "proxies.txt");
  writeFileSync(file, Array.from({ length: 4 }, (_, i) => `http://10.5.0.${i + 1}:3128`).join("\n"));
  return file;
}

describe("the broker on Redis with Sentinel (REDIS_SENTINELS)", () => {
  it("follows a failover of the master by itself: grants held after it, no pair leased twice, tokens increasing", {
    timeout: 90_000,
  }, async () => {
    const broker = await brokerProcess({
      redisUrl: "",
      env: {
        REDIS_SENTINELS: set.sentinelAddresses.join(","),
        REDIS_SENTINEL_NAME: set.name,
        REDIS_KEY_PREFIX: `pbs-${randomBytes(4).toString("hex")}`,
        PROXIES_FILE: proxiesFile(),
        LEASE_TTL_DEFAULT_MS: String(TTL_MS),
      },
    });
    await broker.start();
    const channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    const load = startFailoverLoad(createClient(ProxyBroker, channel), { loops: 8, ttlMs: TTL_MS });
    try {
      await expect.poll(() => load.held.length, { timeout: 20_000, interval: 100 }).toBeGreaterThan(20);
      const before = (await set.master()).port;
      const { killed, promoted, killedAt } = await set.killMaster();
      expect(killed.port).toBe(before);
      const promotedAt = Date.now();
      // the broker reaches the promoted replica through the Sentinels
      // a failure says what the broker logged (once seen in CI: no grant in 30 s after the promotion)
      try {
        await expect.poll(() => load.grantsAskedAfter(promotedAt).length, { timeout: 30_000, interval: 100 }).toBeGreaterThan(20);
      } catch (err) {
        throw new Error(
          `${String(err)}: no grants after the promotion to ${promoted.port} (killed ${killed.port}); the broker said: ${broker.output().slice(-3_000)}`,
        );
      }
      await load.stop();
      const back = Math.min(...load.grantsAskedAfter(killedAt).map((h) => h.from));
      console.log(
        `sentinel failover: master :${killed.port} killed, :${promoted.port} promoted after ${promotedAt - killedAt} ms; first grant ${back - killedAt} ms after the kill; ${load.held.length} leases, ${load.failures.length} failed acquires`,
      );
      // the replica may have missed the last writes: nothing asked after the kill is granted
      // within a lease TTL of the promotion (the broker sees a new run_id on a promoted server)
      expect(load.grantsAskedAfter(killedAt).filter((h) => h.from < promotedAt + TTL_MS - 50)).toEqual([]);
      expect(exclusivityBreaches(load.held)).toEqual([]);
      expect(broker.output()).toMatch(/may have been lost/);
      // the old master comes back as a replica of the new one, and the broker stays on the master
      await set.restart(killed);
      expect((await set.master()).port).toBe(promoted.port);
    } finally {
      await load.stop();
      channel.close();
      await broker.stop();
    }
  });
});

describe("the broker on Redis with Sentinel auth (REDIS_SENTINEL_PASSWORD, REDIS_PASSWORD)", () => {
  const auth = { password: "data-secret-7", sentinelPassword: "sentinel-secret-9" };
  let secured: RedisSentinelSet;
  beforeAll(async () => {
    secured = await startRedisSentinel({ downAfterMs: 500, auth });
  }, 60_000);
  afterAll(async () => {
    await secured?.stop();
  });

  /** A broker on the secured set with `env` added; what one acquire through it answered. */
  async function acquireWith(env: Readonly<Record<string, string>>): Promise<{ readonly code: string; readonly output: string }> {
    const broker = await brokerProcess({
      redisUrl: "",
      env: {
        REDIS_SENTINELS: secured.sentinelAddresses.join(","),
        REDIS_SENTINEL_NAME: secured.name,
        REDIS_KEY_PREFIX: `pbs-${randomBytes(4).toString("hex")}`,
        PROXIES_FILE: proxiesFile(),
        ...env,
      },
    });
    // a broker that cannot reach its Redis at start (here: refused) exits, saying why
    const refused = await broker.start().then(
      () => undefined,
      (err: unknown) => String(err),
    );
    if (refused !== undefined) return { code: "did not start", output: `${refused}\n${broker.output()}` };
    const channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    try {
      const api = createClient(ProxyBroker, channel);
      const code = await api.acquireLease({ workerId: "w", domain: "auth.example" }).then(
        () => "granted",
        (err: unknown) => (err instanceof Error && "code" in err ? String(err.code) : String(err)),
      );
      return { code, output: broker.output() };
    } finally {
      channel.close();
      await broker.stop();
    }
  }

  it("grants with both passwords, and only with both", { timeout: 60_000 }, async () => {
    const both = await acquireWith({ REDIS_SENTINEL_PASSWORD: auth.sentinelPassword, REDIS_PASSWORD: auth.password });
    expect(both.code).toBe("granted");
    const noSentinelAuth = await acquireWith({ REDIS_PASSWORD: auth.password });
    expect(noSentinelAuth.code).not.toBe("granted");
    const noMasterAuth = await acquireWith({ REDIS_SENTINEL_PASSWORD: auth.sentinelPassword });
    expect(noMasterAuth.code).not.toBe("granted");
    // the master's refusal is logged as it is
    expect(noMasterAuth.output).toMatch(/Redis connection: NOAUTH/);
    // neither password is ever printed
    for (const r of [both, noSentinelAuth, noMasterAuth]) {
      expect(r.output).not.toContain(auth.password);
      expect(r.output).not.toContain(auth.sentinelPassword);
    }
  });
});
