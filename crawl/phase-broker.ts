/**
 * A broker for one ProxyBroker phase of the harness (the strategy run, each long-download run):
 * its own process and its own Redis key prefix, so every phase starts from a clean broker state
 * and the harness never wipes keys under a running broker (a broker treats that as a loss of
 * state and holds grants for the longest lease TTL — see docs/spec.md G4).
 */
import * as grpc from "@grpc/grpc-js";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { brokerProcess, type BrokerProcess } from "../test/support/broker-process.js";

export interface PhaseBroker {
  readonly process: BrokerProcess;
  readonly address: string;
  readonly admin: ClientOf<typeof ProxyAdmin>;
  /** Stop the broker (SIGTERM) and close the admin connection. */
  close(): Promise<void>;
}

let phases = 0;

export interface PhaseBrokerOptions {
  /** More settings for the broker (e.g. HEALTH_CHECK_URL in the provider scenario). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Start a broker on `redisUrl` with a key prefix of its own. */
export async function startPhaseBroker(redisUrl: string, name: string, options: PhaseBrokerOptions = {}): Promise<PhaseBroker> {
  const prefix = `crawl-${name}-${++phases}`;
  const broker = await brokerProcess({ redisUrl, env: { ...options.env, REDIS_KEY_PREFIX: prefix } });
  const killOnExit = (): void => void broker.kill();
  process.once("exit", killOnExit);
  await broker.start();
  const channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
  return {
    process: broker,
    address: broker.address,
    admin: createClient(ProxyAdmin, channel),
    async close() {
      channel.close();
      await broker.stop();
      process.removeListener("exit", killOnExit);
    },
  };
}
