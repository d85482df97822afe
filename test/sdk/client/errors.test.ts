import { status } from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import {
  BrokerClientError,
  BrokerSlowError,
  ClientClosedError,
  InvalidArgumentError,
  LeaseLostError,
  NoProxyAvailableError,
  ProxyBrokerClient,
} from "@proxybroker/sdk";
import type { ClientOptions } from "@proxybroker/sdk";

/** Nothing listens on port 1: no call below reaches a broker, and none needs to. */
const NOWHERE = "127.0.0.1:1";

/** Every error the SDK gives a worker is a BrokerClientError with a gRPC status code. */
describe("the SDK's errors", () => {
  const clients: ProxyBrokerClient[] = [];
  const newClient = (extra: Partial<ClientOptions> = {}) => {
    const c = new ProxyBrokerClient({
      address: NOWHERE,
      workerId: "errors",
      breaker: { callTimeoutMs: 200 },
      fallback: { enabled: false },
      ...extra,
    });
    clients.push(c);
    return c;
  };
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  it("refuses bad options with InvalidArgumentError (INVALID_ARGUMENT) naming the option", () => {
    const bad: [Partial<ClientOptions>, RegExp][] = [
      [{ address: "nowhere" }, /address/],
      [{ pool: "bad pool" }, /pool/],
      [{ workerId: "has space" }, /workerId/],
      [{ token: "has space" }, /token/],
      [{ tls: { cert: "x" } }, /tls.cert and tls.key/],
      [{ breaker: { resetTimeoutMs: -1 } }, /resetTimeoutMs/],
      [{ fallback: { staticProxies: ["ftp://x:1"], shard: { index: 0, count: 1 } } }, /staticProxies\[0\]/],
      [{ fallback: { staticProxies: ["10.0.0.1:3128"] } }, /staticWorkers/],
      [{ classifier: { defaults: { minSizeRatio: 7 } } }, /^classifier: /],
      [{ classifier: { perDomain: { "bad host/": {} } } }, /^classifier: /],
    ];
    for (const [extra, message] of bad) {
      let caught: unknown;
      try {
        newClient(extra);
      } catch (err) {
        caught = err;
      }
      expect(caught, JSON.stringify(extra)).toBeInstanceOf(InvalidArgumentError);
      expect(caught).toBeInstanceOf(BrokerClientError);
      expect(caught).not.toBeInstanceOf(TypeError);
      expect(caught).toMatchObject({ code: status.INVALID_ARGUMENT, name: "InvalidArgumentError", message });
    }
  });

  it("rejects bad acquire arguments with InvalidArgumentError before sending anything", async () => {
    const c = newClient();
    for (const [target, options, message] of [
      ["ftp://x.example/", {}, /http or https/],
      ["", {}, /empty/],
      ["shop.example", { maxWaitMs: -1 }, /maxWaitMs/],
      ["shop.example", { ttlMs: -5 }, /ttlMs/],
    ] as const) {
      const err: unknown = await c.acquire(target, options).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect(err).toMatchObject({ code: status.INVALID_ARGUMENT, message });
    }
    const viaLease: unknown = await c.withLease("https://", async () => 1).catch((e: unknown) => e);
    expect(viaLease).toBeInstanceOf(InvalidArgumentError);
  });

  it("a closed client throws ClientClosedError (FAILED_PRECONDITION) from every call", async () => {
    const c = newClient();
    await c.close();
    for (const call of [
      () => c.acquire("shop.example"),
      () => c.withLease("shop.example", async () => 1),
      () => c.fetch("https://shop.example/"),
    ]) {
      const err: unknown = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ClientClosedError);
      expect(err).toBeInstanceOf(BrokerClientError);
      expect(err).toMatchObject({ code: status.FAILED_PRECONDITION, name: "ClientClosedError" });
    }
  });

  it("LeaseLostError is a BrokerClientError: ABORTED when expired or revoked, NOT_FOUND when unknown", () => {
    const expired = new LeaseLostError("l1", "EXPIRED");
    expect(expired).toBeInstanceOf(BrokerClientError);
    expect(expired).toMatchObject({
      leaseId: "l1",
      reason: "EXPIRED",
      code: status.ABORTED,
      name: "LeaseLostError",
      message: "lease l1 lost: EXPIRED",
    });
    expect(new LeaseLostError("l2", "REVOKED").code).toBe(status.ABORTED);
    expect(new LeaseLostError("l3", "NOT_FOUND").code).toBe(status.NOT_FOUND);
  });

  it("every other public error is a BrokerClientError with its own code", () => {
    expect(new NoProxyAvailableError("none", 50)).toMatchObject({ code: status.RESOURCE_EXHAUSTED, retryAfterMs: 50 });
    expect(new BrokerSlowError("slow")).toMatchObject({ code: status.DEADLINE_EXCEEDED });
    for (const e of [
      new NoProxyAvailableError("none", 50),
      new BrokerSlowError("slow"),
      new ClientClosedError(),
      new InvalidArgumentError("bad"),
    ]) {
      expect(e).toBeInstanceOf(BrokerClientError);
    }
  });
});
