import { rm } from "node:fs/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { makeCerts } from "../../support/certs.js";
import type { TestCerts } from "../../support/certs.js";
import { startBroker } from "../../support/broker.js";
import type { TestBroker } from "../../support/broker.js";

function codeOf(p: Promise<unknown>): Promise<number | string> {
  return p.then(
    () => "OK",
    (err: unknown) => (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number" ? err.code : String(err)),
  );
}

/** TLS, mTLS (certificates made with openssl at run time) and ProxyAdmin on its own address. */
describe("TLS and the admin address", () => {
  let certs: TestCerts;
  let other: TestCerts;
  let broker: TestBroker | undefined;
  const closers: Array<() => unknown> = [];
  beforeAll(async () => {
    certs = await makeCerts();
    other = await makeCerts("some-other-ca");
  }, 60_000);
  afterAll(async () => {
    await rm(certs.dir, { recursive: true, force: true });
    await rm(other.dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
    await broker?.stop();
    broker = undefined;
  });

  const sdk = (address: string, extra: Partial<ConstructorParameters<typeof ProxyBrokerClient>[0]>) => {
    const c = new ProxyBrokerClient({ address, breaker: { callTimeoutMs: 1_500 }, fallback: { enabled: false }, ...extra });
    closers.push(() => c.close());
    return c;
  };
  const plainChannel = (address: string) => {
    const ch = new grpc.Client(address, grpc.credentials.createInsecure());
    closers.push(() => ch.close());
    return ch;
  };

  it("serves TLS: the SDK with the CA leases; plaintext and a client trusting another CA cannot", async () => {
    const ca = await certs.read(certs.caFile);
    broker = await startBroker({
      kind: "embedded",
      settings: { tlsCertFile: certs.serverCertFile, tlsKeyFile: certs.serverKeyFile },
      credentials: grpc.credentials.createSsl(ca),
    });
    await broker.admin.addProxies({ proxies: [{ url: "127.0.0.1:3128" }] });
    const lease = await sdk(broker.address, { tls: { ca } }).acquire("https://tls.example/");
    expect(lease.source).toBe("broker");
    expect(lease.proxy.url).toBe("http://127.0.0.1:3128");
    await lease.release({ kind: "SUCCESS" });

    const plain = createClient(ProxyBroker, plainChannel(broker.address));
    expect(await codeOf(plain.acquireLease({ workerId: "p", requestId: "1", domain: "tls.example" }, { deadline: 2_000 }))).toBe(
      grpc.status.UNAVAILABLE,
    );
    const wrongCa = sdk(broker.address, { tls: { ca: await other.read(other.caFile) } });
    expect(await codeOf(wrongCa.acquire("https://tls.example/"))).not.toBe("OK");
  });

  it("requires a client certificate signed by TLS_CLIENT_CA_FILE (mTLS)", async () => {
    const ca = await certs.read(certs.caFile);
    const cert = await certs.read(certs.clientCertFile);
    const key = await certs.read(certs.clientKeyFile);
    broker = await startBroker({
      kind: "embedded",
      settings: { tlsCertFile: certs.serverCertFile, tlsKeyFile: certs.serverKeyFile, tlsClientCaFile: certs.caFile },
      credentials: grpc.credentials.createSsl(ca, key, cert),
    });
    await broker.admin.addProxies({ proxies: [{ url: "127.0.0.1:3128" }] });
    const lease = await sdk(broker.address, { tls: { ca, cert, key } }).acquire("https://mtls.example/");
    expect(lease.source).toBe("broker");
    await lease.release({ kind: "SUCCESS" });

    expect(await codeOf(sdk(broker.address, { tls: { ca } }).acquire("https://mtls.example/"))).not.toBe("OK");
    const foreign = { ca, cert: await other.read(other.clientCertFile), key: await other.read(other.clientKeyFile) };
    expect(await codeOf(sdk(broker.address, { tls: foreign }).acquire("https://mtls.example/"))).not.toBe("OK");
    expect(() => sdk(broker!.address, { tls: { ca, cert } })).toThrow(/tls.cert and tls.key/);
  });

  it("serves ProxyAdmin only on ADMIN_LISTEN_ADDRESS when it is set", async () => {
    broker = await startBroker({ kind: "embedded", settings: { adminListenAddress: "127.0.0.1:0" } });
    expect(broker.server.adminPort).not.toBe(broker.server.port);
    expect(await codeOf(broker.admin.listProxies({ pool: "default" }))).toBe(grpc.status.UNIMPLEMENTED);
    const adminAddress = `127.0.0.1:${broker.server.adminPort}`;
    const admin = createClient(ProxyAdmin, plainChannel(adminAddress));
    expect((await admin.addProxies({ proxies: [{ url: "127.0.0.1:3128" }] })).added).toHaveLength(1);
    const onAdmin = createClient(ProxyBroker, plainChannel(adminAddress));
    expect(await codeOf(onAdmin.acquireLease({ workerId: "a", requestId: "1", domain: "x.example" }))).toBe(grpc.status.UNIMPLEMENTED);
    expect(await codeOf(broker.broker.acquireLease({ workerId: "a", requestId: "1", domain: "x.example" }))).toBe("OK");
  });
});
