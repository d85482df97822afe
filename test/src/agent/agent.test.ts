/**
 * `proxybroker agent` with real parts: a broker process on a real redis-server, the agent in this
 * process, and a worker written only against the generated stubs (unary calls and the Lease
 * stream), as a Go or Java worker would be. The broker is SIGKILLed and started again.
 */
import * as grpc from "@grpc/grpc-js";
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import {
  DenyReason,
  LeaseRequestSchema,
  LeaseSource,
  LostReason,
  OutcomeKind,
  ProxyBroker,
} from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { LeaseResponse } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient, msOf } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { Agent } from "../../../src/agent/agent.js";
import { AgentSettingsError, agentSettings } from "../../../src/agent/settings.js";
import { brokerProcess } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { withRedis } from "../../support/with-redis.js";

const PROXIES = 3;
const SUCCESS = { kind: OutcomeKind.SUCCESS };

function codeOf(p: Promise<unknown>): Promise<number> {
  return p.then(
    () => -1,
    (err: unknown) => (err as grpc.ServiceError).code,
  );
}

describe("proxybroker agent", () => {
  const redis = withRedis();
  let broker: BrokerProcess;
  let agent: Agent;
  let channel: grpc.Client;
  let api: ClientOf<typeof ProxyBroker>;
  let viaAgentAdmin: ClientOf<typeof ProxyAdmin>;
  let direct: ClientOf<typeof ProxyBroker>;
  let directChannel: grpc.Client;

  beforeAll(async () => {
    broker = await brokerProcess({ redisUrl: redis.url() });
    await broker.start();
    directChannel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    const admin = createClient(ProxyAdmin, directChannel);
    direct = createClient(ProxyBroker, directChannel);
    await admin.addProxies({ proxies: Array.from({ length: PROXIES }, (_, i) => ({ url: `http://127.0.0.1:${20_001 + i}` })) });
    // a pool of the agent alone: no worker that keeps its leases to their end was seen in it
    await admin.addProxies({
      pool: "outage",
      proxies: Array.from({ length: PROXIES }, (_, i) => ({ url: `http://127.0.0.1:${20_101 + i}` })),
    });
    agent = await Agent.start(agentSettings({ listen: "127.0.0.1:0", address: broker.address, workerId: "agent-1" }, "agent"), {
      breaker: { callTimeoutMs: 1_000, resetTimeoutMs: 300, volumeThreshold: 1 },
      fallback: { snapshotRefreshMs: 200, membershipRefreshMs: 200 },
    });
    channel = new grpc.Client(agent.address, grpc.credentials.createInsecure());
    api = createClient(ProxyBroker, channel);
    viaAgentAdmin = createClient(ProxyAdmin, channel);
  });

  afterAll(async () => {
    channel?.close();
    directChannel?.close();
    await agent?.stop();
    await broker?.stop();
  });

  it("unary calls: a grant from the broker cut to a second, renewed and released as on the broker; the pair stays exclusive", async () => {
    const { lease } = await api.acquireLease({ workerId: "stub-1", domain: "unary.example", ttl: durationFromMs(10_000) });
    expect(lease?.source).toBe(LeaseSource.BROKER);
    expect(msOf(lease?.ttl)).toBeLessThanOrEqual(1_000);
    const leaseId = lease?.leaseId ?? "";
    const fencingToken = lease?.fencingToken ?? 0n;
    // the broker counts it held: its other PROXIES - 1 proxies are all another worker gets for the site
    const others = await Promise.all(
      Array.from({ length: PROXIES - 1 }, () => direct.acquireLease({ workerId: "w2", domain: "unary.example" })),
    );
    expect(others.map((o) => o.lease?.proxy?.id)).not.toContain(lease?.proxy?.id);
    expect(await codeOf(direct.acquireLease({ workerId: "w2", domain: "unary.example" }))).toBe(grpc.status.RESOURCE_EXHAUSTED);
    const renewed = await api.renewLease({ leaseId, fencingToken, ttl: durationFromMs(5_000) });
    expect(msOf(renewed.ttl)).toBeLessThanOrEqual(1_000);
    expect(msOf(renewed.ttl)).toBeGreaterThan(0);
    // a wrong fencing token, an unknown id: the broker's answers
    expect(await codeOf(api.renewLease({ leaseId, fencingToken: fencingToken + 1n }))).toBe(grpc.status.ABORTED);
    expect(await codeOf(api.renewLease({ leaseId: "no-such-lease", fencingToken: 1n }))).toBe(grpc.status.NOT_FOUND);
    await api.releaseLease({ leaseId, fencingToken, outcome: SUCCESS });
    expect(await codeOf(api.releaseLease({ leaseId, fencingToken, outcome: SUCCESS }))).toBe(grpc.status.NOT_FOUND);
    for (const o of others)
      await direct.releaseLease({ leaseId: o.lease?.leaseId ?? "", fencingToken: o.lease?.fencingToken ?? 0n, outcome: SUCCESS });
  });

  it("bad input gets the broker's status, and ProxyAdmin is relayed with the caller's metadata", async () => {
    expect(await codeOf(api.acquireLease({ workerId: "stub-1" }))).toBe(grpc.status.INVALID_ARGUMENT);
    expect(await codeOf(api.acquireLease({ workerId: "stub-1", domain: "x.example", pool: "bad pool!" }))).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
    const { lease } = await api.acquireLease({ workerId: "stub-1", domain: "bad.example" });
    expect(await codeOf(api.releaseLease({ leaseId: lease?.leaseId ?? "", fencingToken: lease?.fencingToken ?? 0n }))).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
    // the bad release lost nothing: the lease is still held, and released now
    await api.releaseLease({ leaseId: lease?.leaseId ?? "", fencingToken: lease?.fencingToken ?? 0n, outcome: SUCCESS });
    const listed = await viaAgentAdmin.listProxies({});
    expect(listed.proxies.map((p) => p.id).sort()).toEqual(Array.from({ length: PROXIES }, (_, i) => `127.0.0.1:${20_001 + i}`));
  });

  it("the Lease stream: answers in-band, a malformed request leaves it open, pings are answered", async () => {
    const stream = api.lease();
    const answers: LeaseResponse[] = [];
    stream.on("data", (a: LeaseResponse) => answers.push(a));
    const answer = async (pick: (a: LeaseResponse) => boolean): Promise<LeaseResponse> => {
      await expect.poll(() => answers.some(pick), { timeout: 5_000 }).toBe(true);
      return answers.find(pick) as LeaseResponse;
    };
    try {
      stream.write(create(LeaseRequestSchema, {}));
      const bad = await answer((a) => a.kind.case === "denied");
      expect(bad.kind.case === "denied" && bad.kind.value.reason).toBe(DenyReason.INVALID_ARGUMENT);
      stream.write(
        create(LeaseRequestSchema, { kind: { case: "acquire", value: { requestId: "r1", workerId: "stub-2", domain: "stream.example" } } }),
      );
      const g = await answer((a) => a.kind.case === "granted" && a.kind.value.requestId === "r1");
      const lease = g.kind.case === "granted" ? g.kind.value.lease : undefined;
      expect(lease?.source).toBe(LeaseSource.BROKER);
      const leaseId = lease?.leaseId ?? "";
      stream.write(create(LeaseRequestSchema, { kind: { case: "renew", value: { leaseId, fencingToken: lease?.fencingToken ?? 0n } } }));
      await answer((a) => a.kind.case === "renewed" && a.kind.value.leaseId === leaseId);
      stream.write(create(LeaseRequestSchema, { kind: { case: "ping", value: { workerId: "stub-2" } } }));
      await answer((a) => a.kind.case === "pong");
      stream.write(
        create(LeaseRequestSchema, {
          kind: {
            case: "release",
            value: {
              leaseId,
              fencingToken: lease?.fencingToken ?? 0n,
              outcome: SUCCESS,
              next: { requestId: "r2", workerId: "stub-2", domain: "stream.example" },
            },
          },
        }),
      );
      const released = await answer((a) => a.kind.case === "released" && a.kind.value.leaseId === leaseId);
      expect(released.kind.case === "released" && released.kind.value.next.case).toBe("granted");
      stream.write(create(LeaseRequestSchema, { kind: { case: "renew", value: { leaseId, fencingToken: lease?.fencingToken ?? 0n } } }));
      const lost = await answer((a) => a.kind.case === "lost" && a.kind.value.leaseId === leaseId);
      expect(lost.kind.case === "lost" && lost.kind.value.reason).toBe(LostReason.NOT_FOUND);
    } finally {
      stream.end();
    }
  });

  it("broker SIGKILLed: a raw-stub worker goes on leasing from the agent's fallback pool, then from the broker once it is back", {
    timeout: 40_000,
  }, async () => {
    const domain = "outage.example";
    let lastError = "";
    const lease = async (): Promise<LeaseSource | undefined> => {
      const { lease: l } = await api
        .acquireLease({ workerId: "stub-3", pool: "outage", domain, maxWait: durationFromMs(2_000) })
        .catch((err: unknown) => {
          lastError = String(err);
          throw err;
        });
      await api.releaseLease({ leaseId: l?.leaseId ?? "", fencingToken: l?.fencingToken ?? 0n, outcome: SUCCESS });
      return l?.source;
    };
    expect(await lease()).toBe(LeaseSource.BROKER);
    await expect.poll(() => agent.client("outage").fallback.readyDomains.includes(domain), { timeout: 10_000 }).toBe(true);
    await broker.kill();
    try {
      await expect
        .poll(() => lease().catch(() => undefined), { timeout: 15_000, interval: 100, message: `last error: ${lastError}` })
        .toBe(LeaseSource.FALLBACK);
    } finally {
      await broker.start();
    }
    await expect.poll(() => lease().catch(() => undefined), { timeout: 20_000, interval: 100 }).toBe(LeaseSource.BROKER);
  });

  it("refuses a bind off loopback (no client tokens) and a grant longer than a second", () => {
    expect(() => agentSettings({ listen: "0.0.0.0:50052" }, "a")).toThrow(AgentSettingsError);
    expect(() => agentSettings({ listen: "127.0.0.1:50052", leaseTtlMs: "5000" }, "a")).toThrow(/AGENT_LEASE_TTL_MS/);
    expect(agentSettings({ listen: "unix:///tmp/agent.sock" }, "a").listen).toBe("unix:///tmp/agent.sock");
  });
});
