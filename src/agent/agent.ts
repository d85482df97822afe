import * as grpc from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import type { BreakerOptions, FallbackOptions } from "@proxybroker/sdk";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { addService, createClient } from "@proxybroker/sdk/wire";
import { PoolClients } from "../gateway/pool-clients.js";
import { addReflection } from "../grpc/reflection.js";
import { AgentLeases } from "./agent-leases.js";
import { agentHandlers } from "./agent-service.js";
import { addRelayedService } from "./relay.js";
import type { AgentSettings } from "./settings.js";

/** The longest retry_after relayed (the broker's default MAX_RETRY_AFTER_MS). */
const MAX_RETRY_AFTER_MS = 86_400_000;
/** How long a stop waits for the calls in flight (open streams included) before it cuts them. */
const SHUTDOWN_GRACE_MS = 2_000;

/** How the agent's SDK clients run beyond the settings (tests tune the breaker and the refreshes). */
export interface AgentStartOptions {
  readonly onMode?: (pool: string, mode: string) => void;
  readonly breaker?: BreakerOptions;
  readonly fallback?: Omit<FallbackOptions, "silentAfterMs" | "snapshotFile">;
}

/**
 * `proxybroker agent`: the ProxyBroker service for the workers of one machine, the SDK inside
 * (one client per pool: the breaker, the fallback pool, liveness, outcome replay, hand-over);
 * ProxyAdmin relayed to the broker; health and reflection as on the broker.
 */
export class Agent {
  private constructor(
    private readonly server: grpc.Server,
    private readonly clients: PoolClients,
    readonly leases: AgentLeases,
    private readonly broker: grpc.Client,
    /** Where it listens (host:port with the port bound, or the unix: path). */
    readonly address: string,
  ) {}

  static async start(s: AgentSettings, o: AgentStartOptions = {}): Promise<Agent> {
    const clients = new PoolClients({
      pool: s.pool,
      maxPools: 64,
      idleMs: 300_000,
      make: (pool) => {
        const c = new ProxyBrokerClient({
          address: s.brokerTarget,
          pool,
          workerId: s.workerId,
          yieldsLeases: true,
          ...(o.breaker === undefined ? {} : { breaker: o.breaker }),
          fallback: {
            ...o.fallback,
            silentAfterMs: s.silentAfterMs,
            ...(s.snapshotFile === undefined ? {} : { snapshotFile: s.snapshotFile }),
          },
          ...(s.brokerToken === undefined ? {} : { token: s.brokerToken }),
        });
        if (o.onMode !== undefined) c.on("mode", (mode) => o.onMode?.(pool, mode));
        return c;
      },
    });
    clients.get(s.pool); // the default pool's client starts at once: its fallback pool gets ready meanwhile
    clients.start();
    const leases = new AgentLeases({
      client: (pool) => clients.get(pool),
      pool: s.pool,
      leaseTtlMs: s.leaseTtlMs,
      maxRetryAfterMs: MAX_RETRY_AFTER_MS,
    });
    const broker = new grpc.Client(s.brokerTarget, grpc.credentials.createInsecure());
    const server = new grpc.Server();
    addService(
      server,
      ProxyBroker,
      agentHandlers({
        leases,
        broker: createClient(ProxyBroker, broker),
        ...(s.brokerToken === undefined ? {} : { token: s.brokerToken }),
      }),
    );
    addRelayedService(server, ProxyAdmin, { broker, ...(s.brokerToken === undefined ? {} : { token: s.brokerToken }) });
    new HealthImplementation({ "": "SERVING", [ProxyBroker.typeName]: "SERVING", [ProxyAdmin.typeName]: "SERVING" }).addToServer(server);
    addReflection(server);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(s.listen, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    const address = s.listen.startsWith("unix:") ? s.listen : `${s.listen.slice(0, s.listen.lastIndexOf(":"))}:${port}`;
    return new Agent(server, clients, leases, broker, address);
  }

  /** The agent's SDK client of `pool` (made when needed). */
  client(pool: string): ProxyBrokerClient {
    return this.clients.get(pool);
  }

  /** Stop serving, release every lease its clients hold, leave the pools. */
  async stop(): Promise<void> {
    // open Lease streams would hold a graceful shutdown for ever: cut them after a while
    const cut = setTimeout(() => this.server.forceShutdown(), SHUTDOWN_GRACE_MS);
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    clearTimeout(cut);
    await this.leases.releaseAll();
    await this.clients.closeAll();
    this.broker.close();
  }

  /** Stop at once (connections cut), then as `stop`. */
  async kill(): Promise<void> {
    this.server.forceShutdown();
    await this.leases.releaseAll();
    await this.clients.closeAll();
    this.broker.close();
  }
}
