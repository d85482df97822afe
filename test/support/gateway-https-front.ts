/**
 * Test helper: an HTTPS front for one of the crawl harness's strict sites (crawl/sites.ts, plain
 * HTTP). TLS ends here, with a certificate of the caller's (the test CA's server certificate, for
 * 127.0.0.1 and localhost), and each connection goes on to the site from the client's own address
 * (every 127.0.0.0/8 address is local): the site still sees, judges and logs the outgoing IP of
 * the tinyproxy the request came through, as it does over plain HTTP.
 */
import { connect } from "node:net";
import type { Socket } from "node:net";
import { createServer } from "node:tls";
import type { TLSSocket } from "node:tls";

export interface HttpsFront {
  /** `https://127.0.0.1:port` */
  readonly origin: string;
  close(): Promise<void>;
}

/** An HTTPS front on 127.0.0.1 (a free port) for the plain-HTTP site at `site` (`host:port`). */
export async function startHttpsFront(opts: { readonly site: string; readonly key: Buffer; readonly cert: Buffer }): Promise<HttpsFront> {
  const [siteHost = "", sitePort = ""] = opts.site.split(":");
  const open = new Set<Socket>();
  const server = createServer({ key: opts.key, cert: opts.cert }, (client: TLSSocket) => {
    const from = (client.remoteAddress ?? "").replace(/^::ffff:/, "");
    const up = connect({ host: siteHost, port: Number(sitePort), localAddress: from });
    for (const s of [client, up]) {
      open.add(s);
      s.once("close", () => open.delete(s));
    }
    client.pipe(up);
    up.pipe(client);
    client.on("error", () => up.destroy());
    up.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    origin: `https://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
