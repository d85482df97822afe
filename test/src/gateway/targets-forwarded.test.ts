/**
 * The target checked is the target forwarded (docs/gateway.md, "Safe by default"): the gateway
 * rebuilds the request line from the URL it parsed and checked, so an upstream proxy that reads a
 * URL otherwise cannot be steered past the deny list. Against a real tinyproxy: a "secret" service
 * on a refused address (127.0.0.1) and a public one (127.0.0.2); every hidden-host form reaches
 * the public one or is refused, never the secret one. And CONNECT reaches port 443 only, unless
 * GATEWAY_CONNECT_PORTS opens more.
 */
import { createServer } from "node:http";
import type { Server } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectPorts, TargetPolicy, httpTarget } from "../../../src/gateway/targets.js";

const forwardedUrl = (raw: string): string => httpTarget(raw).href;
import { withBroker } from "../../support/with-broker.js";
import { startTestGateway } from "../../support/gateway-under-test.js";
import type { TestGateway } from "../../support/gateway-under-test.js";
import { startTinyproxies } from "../../support/tinyproxies.js";
import type { Tinyproxies } from "../../support/tinyproxies.js";

/** A service that counts the requests it got. */
async function service(host: string, name: string): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? "");
    res.end(name);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

/** Send `head` as it is (a raw request, the way an attacker writes it) and read the status line. */
function raw(address: string, head: string): Promise<string> {
  const [host, port] = address.split(":");
  return new Promise((resolve, reject) => {
    const socket = connect({ host: host ?? "", port: Number(port) }, () => socket.write(head));
    let got = "";
    socket.setTimeout(15_000, () => socket.destroy(new Error(`no answer to ${JSON.stringify(head)}`)));
    socket.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      if (got.includes("\r\n")) {
        socket.destroy();
        resolve(got.split("\r\n")[0] ?? "");
      }
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(got.split("\r\n")[0] ?? ""));
  });
}

describe("the target checked is the target forwarded", () => {
  const b = withBroker();
  let tiny: Tinyproxies;
  let secret: Awaited<ReturnType<typeof service>>;
  let open: Awaited<ReturnType<typeof service>>;
  let t: TestGateway;

  beforeAll(async () => {
    secret = await service("127.0.0.1", "secret");
    open = await service("127.0.0.2", "public");
    tiny = await startTinyproxies({ count: 1 });
    await b.admin.addProxies({ proxies: tiny.proxies.map((p) => ({ url: `http://${p.address}` })) });
    // 127.0.0.1 is refused; 127.0.0.2 stands for any public site
    t = await startTestGateway({
      address: b.address,
      workerId: "targets-forwarded",
      over: { targets: new TargetPolicy(["127.0.0.1/32"]), connectPorts: new ConnectPorts() },
    });
  });
  afterAll(async () => {
    await t?.stop();
    await tiny?.stop();
    for (const s of [secret, open]) s?.server.close();
  });

  it("rebuilds the request line from what it parsed: credentials, fragment and raw host forms are gone", () => {
    expect(forwardedUrl("http://192.0.2.1?@127.0.0.1:51120/q")).toBe("http://192.0.2.1/?@127.0.0.1:51120/q");
    expect(forwardedUrl("http://192.0.2.1#@127.0.0.1:51120/q")).toBe("http://192.0.2.1/");
    expect(forwardedUrl("http://192.0.2.1\\@127.0.0.1:51120/q")).toBe("http://192.0.2.1/@127.0.0.1:51120/q");
    expect(forwardedUrl("http://127.0.0.1:51120@192.0.2.1/q")).toBe("http://192.0.2.1/q");
    expect(forwardedUrl("http://%31%32%37.0.0.1/q")).toBe("http://127.0.0.1/q");
  });

  it("hidden-host forms reach the host the gateway checked, never the refused one, through a real tinyproxy", {
    timeout: 60_000,
  }, async () => {
    const s = `127.0.0.1:${secret.port}`;
    const o = `127.0.0.2:${open.port}`;
    const forms = [`http://${o}?@${s}/q`, `http://${o}#@${s}/q`, `http://${o}\\@${s}/q`, `http://${s}@${o}/q`, `http://user:pw@${o}/q`];
    let served = 0;
    for (const url of forms) {
      // served from the host checked, or refused by the HTTP parser (a `#` in a request line: 400)
      const status = await raw(t.gw.address, `GET ${url} HTTP/1.1\r\nHost: ${s}\r\nConnection: close\r\n\r\n`);
      expect(status, url).toMatch(/^HTTP\/1\.1 (200|400)/);
      if (status.includes(" 200")) served++;
    }
    // `?@` and the userinfo forms are served (from the public host); Node's parser refuses the
    // `#` and `\` in a request line
    expect(served).toBe(3);
    // a Host header naming the refused service changes nothing either
    expect(await raw(t.gw.address, `GET http://${o}/h HTTP/1.1\r\nHost: ${s}\r\nConnection: close\r\n\r\n`)).toMatch(/^HTTP\/1\.1 200/);
    // the refused host itself, plainly or encoded: 403
    for (const url of [`http://${s}/q`, `http://%31%32%37.0.0.1:${secret.port}/q`, `http://0x7f.0.0.1:${secret.port}/q`]) {
      expect(await raw(t.gw.address, `GET ${url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`), url).toMatch(/^HTTP\/1\.1 403/);
    }
    expect(secret.hits).toEqual([]);
    expect(open.hits.length).toBe(served + 1);
  });

  it("CONNECT reaches port 443 only: another port, or a refused host hidden in the authority, is a 403", async () => {
    for (const authority of [`127.0.0.2:${open.port}`, "127.0.0.2:25", `127.0.0.2:443@127.0.0.1:${secret.port}`]) {
      const status = await raw(t.gw.address, `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
      expect(status, authority).toMatch(/^HTTP\/1\.1 403/);
    }
    expect(secret.hits).toEqual([]);
    expect(new ConnectPorts([443, 8443]).refusal(8443)).toBeUndefined();
    expect(new ConnectPorts([443, 8443]).refusal(25)).toMatch(/GATEWAY_CONNECT_PORTS allows 443, 8443/);
    expect(new ConnectPorts("any").refusal(25)).toBeUndefined();
  });
});
