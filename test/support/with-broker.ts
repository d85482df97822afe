/**
 * A test file's broker (or a describe block's): a real BrokerServer (broker.ts) started in the
 * hooks of the scope `withBroker()` is called in, on the embedded store, a Redis or a Redis
 * Cluster. The fixture reads like a `TestBroker` (address, server, store, clients) once started.
 */
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import type { BrokerServerSettings } from "../../src/server/broker-server.js";
import { startBroker, type StartBrokerOptions, type TestBroker } from "./broker.js";
import { startRedisCluster, type RedisCluster } from "./redis-cluster.js";
import { withRedis, type FileRedis } from "./with-redis.js";

export interface WithBrokerOptions extends Omit<StartBrokerOptions, "kind" | "redisUrl" | "clusterNodes"> {
  /** The store; "embedded" by default. */
  readonly kind?: StartBrokerOptions["kind"];
  /** The Redis of kind "redis"; by default a redis-server of the broker's own, in the same hooks. */
  readonly redis?: FileRedis;
  /** A fresh broker (and store) for every test, stopped after it, instead of one for the scope. */
  readonly each?: boolean;
}

export interface BrokerFixture extends TestBroker {
  /** The Redis the broker runs on (kind "redis"), else undefined. */
  readonly redis: FileRedis | undefined;
  /** Stop the running broker and start a fresh one (a fresh store), with these settings over the fixture's. */
  restart(settings?: Partial<BrokerServerSettings>): Promise<void>;
}

/** Register a broker's start and stop with the hooks of the current scope (per test with `each`). */
export function withBroker(options: WithBrokerOptions = {}): BrokerFixture {
  const { kind = "embedded", redis: given, each = false, ...rest } = options;
  const redis = kind === "redis" ? (given ?? withRedis()) : undefined;
  let cluster: RedisCluster | undefined;
  if (kind === "cluster") {
    beforeAll(async () => {
      cluster = await startRedisCluster();
    });
    afterAll(async () => {
      await cluster?.stop();
    });
  }
  let current: TestBroker | undefined;
  const start = async (settings: Partial<BrokerServerSettings> = {}): Promise<void> => {
    current = await startBroker({
      ...rest,
      kind,
      ...(redis === undefined ? {} : { redisUrl: redis.url() }),
      ...(cluster === undefined ? {} : { clusterNodes: cluster.addresses }),
      settings: { ...rest.settings, ...settings },
    });
  };
  const stop = async (): Promise<void> => {
    const b = current;
    current = undefined;
    await b?.stop();
  };
  (each ? beforeEach : beforeAll)(() => start());
  (each ? afterEach : afterAll)(stop);
  const started = (): TestBroker => {
    if (current === undefined) throw new Error("the broker is not started (or already stopped)");
    return current;
  };
  return {
    redis,
    get address() {
      return started().address;
    },
    get server() {
      return started().server;
    },
    get store() {
      return started().store;
    },
    get broker() {
      return started().broker;
    },
    get admin() {
      return started().admin;
    },
    get health() {
      return started().health;
    },
    stop,
    async restart(settings) {
      await stop();
      await start(settings);
    },
  };
}
