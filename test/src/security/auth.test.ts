import { afterEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create } from "@bufbuild/protobuf";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import { LeaseRequestSchema } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { MemoryStore } from "@proxybroker/sdk/engine";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { createClient } from "@proxybroker/sdk/wire";
import { BrokerServer } from "../../../src/server/broker-server.js";
import { MIN_TOKEN_LENGTH, TokenTable } from "../../../src/security/tokens.js";
import { TEST_SETTINGS, startBroker } from "../../support/broker.js";
import type { TestBroker } from "../../support/broker.js";

const WORKER = "w".repeat(MIN_TOKEN_LENGTH);
const ADMIN = "A".repeat(MIN_TOKEN_LENGTH);
const TABLE = TokenTable.parse(`${WORKER} worker fleet\n${ADMIN} admin ops\n`);

function bearer(token: string): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set("authorization", `Bearer ${token}`);
  return m;
}

function codeOf(p: Promise<unknown>): Promise<number | string> {
  return p.then(
    () => "OK",
    (err: unknown) => (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number" ? err.code : String(err)),
  );
}

/** Bearer tokens and roles over real gRPC (AUTH_TOKENS_FILE's table handed to the server). */
describe("authentication and roles", () => {
  let broker: TestBroker | undefined;
  const clients: ProxyBrokerClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
    await broker?.stop();
    broker = undefined;
  });

  it("refuses calls without a known token, a worker token on ProxyAdmin, and lets the right roles through", async () => {
    broker = await startBroker({ kind: "embedded", tokens: TABLE });
    const b = broker;
    await b.admin.addProxies({ proxies: [{ url: "127.0.0.1:3128" }] }, { metadata: bearer(ADMIN) });
    const acquire = (metadata?: grpc.Metadata) =>
      b.broker.acquireLease({ workerId: "w1", requestId: `r${Math.random()}`, domain: "auth.example" }, metadata ? { metadata } : {});
    expect(await codeOf(acquire())).toBe(grpc.status.UNAUTHENTICATED);
    expect(await codeOf(acquire(bearer("x".repeat(MIN_TOKEN_LENGTH))))).toBe(grpc.status.UNAUTHENTICATED);
    const raw = new grpc.Metadata();
    raw.set("authorization", WORKER); // no "Bearer " scheme
    expect(await codeOf(acquire(raw))).toBe(grpc.status.UNAUTHENTICATED);
    expect(await codeOf(b.admin.listProxies({ pool: "default" }, { metadata: bearer(WORKER) }))).toBe(grpc.status.PERMISSION_DENIED);
    expect(
      await codeOf(b.admin.addProxies({ pool: "default", proxies: [{ url: "http://10.9.9.9:1" }] }, { metadata: bearer(WORKER) })),
    ).toBe(grpc.status.PERMISSION_DENIED);
    expect(await codeOf(b.admin.setDomainPolicy({ policy: { pattern: "*", maxConcurrency: 1000 } }, {}))).toBe(grpc.status.UNAUTHENTICATED);

    const lease = await acquire(bearer(WORKER));
    expect(lease.lease?.proxy?.id).toBe("127.0.0.1:3128");
    expect(await codeOf(acquire(bearer(ADMIN)))).toBe(grpc.status.RESOURCE_EXHAUSTED); // admin may lease too: the one proxy is busy
    const listed = await b.admin.listProxies({ pool: "default" }, { metadata: bearer(ADMIN) });
    expect(listed.proxies).toHaveLength(1);
    // the refused AddProxies added nothing
    expect(listed.proxies.map((p) => p.id)).not.toContain("10.9.9.9:1");

    // health stays open
    expect((await b.health.check({ service: "" })).status).toBe(1);
    const metrics = await b.server.metrics.registry.getSingleMetricAsString("proxybroker_auth_refused_total");
    expect(metrics).toMatch(/code="UNAUTHENTICATED",method="\/proxybroker.v1.ProxyBroker\/AcquireLease"} 3/);
    expect(metrics).toMatch(/code="PERMISSION_DENIED",method="\/proxybroker.v1.ProxyAdmin\/ListProxies"} 1/);
  });

  it("a token's name is the caller's identity: last_used_by and the caller metric; a client cannot claim another name", async () => {
    const nameless = "n".repeat(MIN_TOKEN_LENGTH);
    broker = await startBroker({
      kind: "embedded",
      tokens: TokenTable.parse(`${WORKER} worker fleet\n${ADMIN} admin ops\n${nameless} worker\n`),
    });
    const b = broker;
    await b.admin.addProxies({ proxies: [{ url: "127.0.0.1:3128" }, { url: "127.0.0.1:3129" }] }, { metadata: bearer(ADMIN) });
    const spoofed = bearer(nameless);
    spoofed.set("proxybroker-caller", "ops");
    const a = await b.broker.acquireLease({ workerId: "host-1", requestId: "r1", domain: "id.example" }, { metadata: bearer(WORKER) });
    const c = await b.broker.acquireLease({ workerId: "host-2", requestId: "r2", domain: "id.example" }, { metadata: spoofed });
    expect(a.lease?.proxy?.id).not.toBe(c.lease?.proxy?.id);
    const { proxies } = await b.admin.listProxies({ pool: "default" }, { metadata: bearer(ADMIN) });
    const by = Object.fromEntries(proxies.map((p) => [p.id, p.lastUsedBy]));
    expect(by[a.lease!.proxy!.id]).toBe("fleet");
    expect(by[c.lease!.proxy!.id]).toBe("host-2");
    const values = (await b.server.metrics.callerGrants.get()).values.map((v) => [v.labels.caller, v.value]);
    expect(values).toEqual(
      expect.arrayContaining([
        ["fleet", 1],
        ["-", 1],
      ]),
    );
    expect(values.some(([caller]) => caller === "ops")).toBe(false);
  });

  it("ends a Lease stream without a token at once with UNAUTHENTICATED, before any request is read", async () => {
    broker = await startBroker({ kind: "embedded", tokens: TABLE });
    const call = broker.broker.lease();
    const ended = new Promise<number>((resolve) => call.on("error", (err: grpc.ServiceError) => resolve(err.code)));
    call.write(create(LeaseRequestSchema, { kind: { case: "acquire", value: { workerId: "w", requestId: "1", domain: "s.example" } } }));
    let answers = 0;
    call.on("data", () => answers++);
    expect(await ended).toBe(grpc.status.UNAUTHENTICATED);
    expect(answers).toBe(0);
  });

  it("the SDK sends its token; with a wrong one every call fails with UNAUTHENTICATED and the client never falls back", async () => {
    broker = await startBroker({ kind: "embedded", tokens: TABLE });
    await broker.admin.addProxies({ proxies: [{ url: "127.0.0.1:3128" }] }, { metadata: bearer(ADMIN) });
    const good = new ProxyBrokerClient({ address: broker.address, workerId: "good", token: WORKER });
    const bad = new ProxyBrokerClient({
      address: broker.address,
      workerId: "bad",
      token: "z".repeat(MIN_TOKEN_LENGTH),
      breaker: { callTimeoutMs: 1_000 },
    });
    clients.push(good, bad);
    const lease = await good.acquire("https://sdk.example/");
    expect(lease.source).toBe("broker");
    await lease.release({ kind: "SUCCESS" });
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      expect(await codeOf(bad.acquire("https://sdk.example/"))).toBe(grpc.status.UNAUTHENTICATED);
      expect(Date.now() - started).toBeLessThan(1_000);
    }
    expect(bad.mode).toBe("broker");
    expect(() => new ProxyBrokerClient({ address: broker!.address, token: "has space" })).toThrow(/token/);
  });

  it("a new token table (what SIGHUP loads) applies from the next call", async () => {
    let table: TokenTable | undefined = TABLE;
    const store = new MemoryStore({ scoring: DEFAULT_SCORING });
    const server = await BrokerServer.start({ store, settings: TEST_SETTINGS, tokens: () => table });
    const channel = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    const admin = createClient(ProxyAdmin, channel);
    try {
      expect(await codeOf(admin.listProxies({ pool: "default" }, { metadata: bearer(ADMIN) }))).toBe("OK");
      const NEXT = "n".repeat(MIN_TOKEN_LENGTH);
      table = TokenTable.parse(`${NEXT} admin`);
      expect(await codeOf(admin.listProxies({ pool: "default" }, { metadata: bearer(ADMIN) }))).toBe(grpc.status.UNAUTHENTICATED);
      expect(await codeOf(admin.listProxies({ pool: "default" }, { metadata: bearer(NEXT) }))).toBe("OK");
    } finally {
      channel.close();
      await server.shutdown(200);
      await store.close();
    }
  });

  it("never shows a proxy password outside a worker's own lease and the snapshot", async () => {
    broker = await startBroker({ kind: "embedded", tokens: TABLE });
    const admin = bearer(ADMIN);
    const added = await broker.admin.addProxies(
      { proxies: [{ url: "http://alice:s3cret@127.0.0.1:3128" }, { url: "ftp://bob:hunter2@10.0.0.1:21" }] },
      { metadata: admin },
    );
    expect(added.added).toEqual(["alice@127.0.0.1:3128"]);
    expect(added.rejected[0]?.url).toBe("ftp://bob:***@10.0.0.1:21");
    expect(JSON.stringify(added.rejected)).not.toContain("hunter2");
    const listed = await broker.admin.listProxies({ pool: "default" }, { metadata: admin });
    expect(listed.proxies[0]?.url).toBe("http://alice:***@127.0.0.1:3128");
    const lease = await broker.broker.acquireLease(
      { workerId: "w", requestId: "secret-1", domain: "s.example" },
      { metadata: bearer(WORKER) },
    );
    expect(lease.lease?.proxy?.url).toBe("http://alice:s3cret@127.0.0.1:3128");
    const snapshot = await broker.broker.getPoolSnapshot({ pool: "default" }, { metadata: bearer(WORKER) });
    expect(snapshot.proxies[0]?.url).toBe("http://alice:s3cret@127.0.0.1:3128");
    const metrics = await broker.server.metrics.registry.metrics();
    expect(metrics).not.toContain("s3cret");
  });
});
