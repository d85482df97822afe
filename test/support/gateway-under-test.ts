import { ProxyBrokerClient } from "@proxybroker/sdk";
import { Gateway } from "../../src/gateway/gateway.js";
import type { GatewayOptions } from "../../src/gateway/gateway.js";
import { ConnectPorts, TargetPolicy } from "../../src/gateway/targets.js";

/** What `startTestGateway` needs. */
export interface TestGatewayOptions {
  /** The broker's address. */
  readonly address: string;
  readonly workerId: string;
  /** The SDK clients' options beyond address, pool and worker id. */
  readonly client?: Partial<ConstructorParameters<typeof ProxyBrokerClient>[0]>;
  /** Gateway options over the test defaults (loopback, any port, every target allowed, short waits). */
  readonly over?: Partial<GatewayOptions>;
}

/** An in-process gateway, started, and its SDK clients (one per pool, made on first use). */
export interface TestGateway {
  readonly gw: Gateway;
  readonly clients: ReadonlyMap<string, ProxyBrokerClient>;
  /** Stop the gateway, then close its clients (their leases released, the pool left). */
  stop(): Promise<void>;
}

export async function startTestGateway(o: TestGatewayOptions): Promise<TestGateway> {
  const clients = new Map<string, ProxyBrokerClient>();
  const gw = new Gateway({
    host: "127.0.0.1",
    port: 0,
    client: (pool) => {
      let c = clients.get(pool);
      if (c === undefined) {
        c = new ProxyBrokerClient({ address: o.address, pool, workerId: o.workerId, ...o.client });
        clients.set(pool, c);
      }
      return c;
    },
    pool: "default",
    targets: new TargetPolicy([]),
    // the tests' HTTPS sites listen on any port
    connectPorts: new ConnectPorts("any"),
    tokens: undefined,
    waitMs: 2_000,
    maxWaitMs: 5_000,
    tunnels: { idleMs: 60_000, maxLifeMs: 600_000 },
    maxConnections: 100,
    requestTimeoutMs: 30_000,
    upstreamTimeoutMs: 10_000,
    ...o.over,
  });
  await gw.start();
  return {
    gw,
    clients,
    async stop() {
      await gw.stop();
      await Promise.all([...clients.values()].map((c) => c.close()));
    },
  };
}
